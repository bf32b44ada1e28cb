"""What the model can call (DESIGN.md, layer 2); tools/base.py and tools/schema.py are layer 0."""
