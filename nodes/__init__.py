"""One concern per module: each is one step of a run (DESIGN.md, layer 3)."""
