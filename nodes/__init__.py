"""One concern per module: each is one step of a run (docs/ARCHITECTURE.md, layer 3)."""
