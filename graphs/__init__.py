"""Graph assembly only: which nodes, which edges, which state (docs/ARCHITECTURE.md, layer 4)."""
