"""What the model can call (docs/ARCHITECTURE.md, layer 2); base.py, schema.py and registry.py are layer 0."""
