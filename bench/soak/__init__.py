"""The soak harness (issue 26): the real bot (`ania serve`) against the OneBot fake and the scripted model, each
in its own process, driven for minutes with a seeded mix of traffic and faults, then checked.

Modules: `traffic` (the seeded plan), `model` (how the scripted model answers and fails), `model_proc` and
`onebot_proc` (the two fakes as processes), `bot` (the bot process and its samples), `faults` (faults done
from outside: kill -9, a SQLite write lock, writes refused), `checks` (the invariants), `report` (the
table), `run` (all of it in order). `python -m bench.soak --help`.
"""
