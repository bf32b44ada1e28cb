"""Persistence of conversations (docs/ARCHITECTURE.md, layer 1).

How the modules fit:
- `factory`: opens the checkpointer (SQLite by default, Postgres by URL) and names a session's thread;
- `saver`: the SQLite saver, LangGraph's with a history loader that does not grow with every load;
- `memo`: what that saver remembers of each thread between loads (bounded);
- `fold`: the message reducer, `add_messages` once per write in one pass (the saver and the graph state);
- `delta`: the message channel, deltas with full copies spaced in proportion to the history;
- `sessions`: listing sessions, a session's checkpoint history and its messages, without rebuilding histories.
"""
