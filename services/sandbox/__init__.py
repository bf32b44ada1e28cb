"""The bash tool's sandbox: `bwrap` (what a command may see: bubblewrap arguments, the probe) and `run`
(running one command line, its output, its time limit, and killing everything it started)."""
