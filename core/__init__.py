"""Layer 0 (docs/ARCHITECTURE.md): what every other layer builds on and that imports nothing of ours above it.

- `settings`: the typed settings (`ania.toml`, env), their sections and the checks beyond pydantic;
- `errors`: the three error families;
- `context`: the run context as the bottom layer sees it (a protocol; services' `RunContext` fills it);
- `tool`, `schema`, `registry`: the tool abstraction, provider schemas, the executor tables.
"""
