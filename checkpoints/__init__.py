"""Persistence of conversations: the checkpointer factory and session listing (DESIGN.md, layer 1)."""
