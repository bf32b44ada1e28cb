"""Benchmarks (`make bench`): Ania's engine against LangChain's `create_agent` on one scripted model.

`bench.run` runs them all; each module also runs alone (`python -m bench.bench_loop --help`). Plain
tables, medians, ratios ours/peer; loops are bounded and everything stays on 127.0.0.1.
"""
