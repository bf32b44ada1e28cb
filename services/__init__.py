"""Everything stateful that is not a graph (docs/ARCHITECTURE.md, layer 1)."""
