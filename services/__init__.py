"""Everything stateful that is not a graph (DESIGN.md, layer 1)."""
