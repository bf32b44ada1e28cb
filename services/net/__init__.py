"""Outbound HTTP for member- or model-given URLs: the address guard (`guard`) and one guarded download (`fetch`)."""
