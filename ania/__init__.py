"""The runtime: composition root, message entry, platform adapters, CLI (DESIGN.md, layer 5)."""
