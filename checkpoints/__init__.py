"""Persistence of conversations (docs/ARCHITECTURE.md, layer 1).

How the modules fit:
- `factory`: opens the checkpointer (SQLite by default, Postgres by URL: `pg`) and names a session's thread;
- `loader`: the history loader our savers share, one that does not grow with every load;
- `saver`, `saver_pg`: the SQLite and Postgres savers, LangGraph's with that loader;
- `memo`: what that saver remembers of each thread between loads (bounded);
- `fold`: the message reducer, `add_messages` once per write in one pass (the saver and the graph state);
- `delta`: the message channel, deltas with full copies spaced in proportion to the history;
- `sessions`: listing sessions, a session's checkpoint history and its messages, without rebuilding histories;
- `tables`: reading the checkpoint tables in SQLite's or Postgres' words (sessions, history, transcript,
  maintenance: fork and prune);
- `copy`: every thread from one saver to another (SQLite to Postgres).
"""
