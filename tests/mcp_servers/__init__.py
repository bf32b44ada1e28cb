"""MCP test servers and the harness the MCP tests and the benchmark share."""
