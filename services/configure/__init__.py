"""Editing the operator's configuration at run time: `ania.toml` keys (`edit`) and the JSON files (`files`)."""
