# Everything a newcomer needs: `make demo` (set up and chat with an offline model), `make chat` (set up and
# run the bot), `make test` (set up and run the tests). Options go through ARGS: make chat ARGS="--session g:team".
# `make run` serves QQ through a OneBot v11 implementation (README: "QQ through OneBot v11").
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
STUDIO_ENV := LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true LANGSMITH_TRACING=false

.PHONY: setup chat run demo test test-stock lint bench soak soak-ci studio clean

setup: $(STAMP)

# The first run takes a while: it says what it installs, and pip shows its progress (its progress bars at a
# terminal; one line per package in a log, e.g. CI's). Needs only python3 (3.11+), git and make.
$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "make setup: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "make setup: installing Ania's dependencies into $(VENV) (about 2 minutes the first time)"
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	@if [ -t 1 ]; then bar=on; else bar=off; fi; \
	  $(PY) -m pip install --disable-pip-version-check --progress-bar $$bar -e '.[dev]'
	@touch $(STAMP)
	@echo "make setup: ready ($(VENV)/bin/ania)"

chat: $(STAMP)
	$(VENV)/bin/ania chat $(ARGS)

run: $(STAMP)
	$(VENV)/bin/ania serve $(ARGS)

# Chat with the offline scripted model (it echoes; ARGS="--script FILE" scripts it): no API key needed.
# The model is served inside the same process on a free port, so Ctrl-C leaves nothing running.
demo: $(STAMP)
	$(VENV)/bin/ania demo $(ARGS)

# The tests mostly wait (subprocesses, sockets, timers), so pytest-xdist runs them on more workers than cores;
# tests that share a server are grouped on one worker (xdist_group). WORKERS=0 runs them in this process.
WORKERS ?= 4
test: $(STAMP)
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup $(ARGS)

# The same code on the libraries' own internals (engine.stock, README "Performance"): the equivalence, replay and
# fork tests and an end-to-end subset (chat turns, subagents, the session commands as real processes); CI runs
# it after `make test`. The one test left out strips every ANIA_* variable (it tests a broken pipe, not a mode).
STOCK_TESTS := tests/test_stock_mode.py tests/test_checkpoint_serde.py tests/test_lean_client.py \
	tests/test_checkpoint_replay.py tests/test_session_ops.py tests/test_graph_shape.py tests/test_agent_loop.py \
	tests/test_subagents.py tests/test_saver_pg.py tests/test_cli.py::test_sessions_list_and_show_start_nothing
test-stock: $(STAMP)
	ANIA_ENGINE__STOCK=1 $(PY) -m pytest -n $(WORKERS) --dist loadgroup $(STOCK_TESTS) \
	  --deselect tests/test_session_ops.py::test_a_reader_that_stops_early_ends_the_command_quietly $(ARGS)

# Lint and type-check (ruff's wider rule set and mypy, configured in pyproject.toml); CI runs it first.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m bench.run $(ARGS)

# The soak (README "Reliability"): the real bot against the OneBot fake and the scripted model, each its own
# process, for MINUTES with seeded traffic and faults, then the invariants and a table; a failed one exits 1 with
# its seed. ARGS="--seed 7 --groups 16" changes the mix. CI runs `make soak-ci`: two minutes, a fixed seed.
MINUTES ?= 10
soak: $(STAMP)
	$(PY) -m bench.soak --minutes $(MINUTES) $(ARGS)

soak-ci: $(STAMP)
	$(PY) -m bench.soak --minutes 2 --groups 4 --privates 2 --seed 26 $(ARGS)

studio: $(STAMP)
	$(STUDIO_ENV) $(VENV)/bin/langgraph dev --no-browser --allow-blocking --port 2024 $(ARGS)

clean:
	rm -rf $(VENV) .langgraph_api
