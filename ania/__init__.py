"""The runtime: composition root, message entry, platform adapters, CLI (docs/ARCHITECTURE.md, layer 5)."""
