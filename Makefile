# Everything a newcomer needs: `make demo` (set up and chat with an offline model), `make chat` (set up and
# run the bot), `make test` (set up and run the tests). Options go through ARGS: make chat ARGS="--session g:team".
# `make run` serves QQ through a OneBot v11 implementation (README: "QQ through OneBot v11").
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
STUDIO_ENV := LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true LANGSMITH_TRACING=false

.PHONY: setup chat run demo test lint bench studio clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

chat: $(STAMP)
	$(VENV)/bin/ania chat $(ARGS)

run: $(STAMP)
	$(VENV)/bin/ania serve $(ARGS)

# Chat with the offline scripted model (it echoes; ARGS="--script FILE" scripts it): no API key needed.
# The model is served inside the same process on a free port, so Ctrl-C leaves nothing running.
demo: $(STAMP)
	$(VENV)/bin/ania demo $(ARGS)

test: $(STAMP)
	$(PY) -m pytest $(ARGS)

# Lint and type-check (ruff's wider rule set and mypy, configured in pyproject.toml); CI runs it first.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m bench.run $(ARGS)

studio: $(STAMP)
	$(STUDIO_ENV) $(VENV)/bin/langgraph dev --no-browser --allow-blocking --port 2024 $(ARGS)

clean:
	rm -rf $(VENV) .langgraph_api
