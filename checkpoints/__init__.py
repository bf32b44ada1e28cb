"""Persistence of conversations: the checkpointer factory and session listing (docs/ARCHITECTURE.md, layer 1)."""
