"""Graph assembly only: which nodes, which edges, which state (DESIGN.md, layer 4)."""
