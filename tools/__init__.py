"""What the model can call (docs/ARCHITECTURE.md, layer 2); the tool base, schemas and registry are core/."""
