"""The state the tool-call gates consult: who is an admin, pending approvals, plan mode (nodes/gates.py)."""
