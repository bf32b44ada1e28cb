"""Chat platforms: how messages come in and replies go out. Each adapter attaches to the engine's
outboxes for the sessions it owns (services/outboxes.py), so several can run at once.

- `bridge`: `ChatBridge`, the callback bridge (T7) over a platform's send function;
- `terminal`: `ania chat`.
"""
