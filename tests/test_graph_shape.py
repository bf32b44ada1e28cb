"""Snapshots of what drifts silently: the graph diagrams. Regenerate with UPDATE_SNAPSHOTS=1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphs.agent import build_agent_graph
from graphs.clock import build_clock_graph
from graphs.gate import build_gate_graph
from graphs.subagent import build_subagent_graph
from graphs.team import build_team_graph

SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.mark.parametrize("name, graph", [
    ("agent", lambda: build_agent_graph(lambda: 1000)),
    ("gate", build_gate_graph),
    ("subagent", lambda: build_subagent_graph(lambda: 1000)),
    ("team", build_team_graph),
    ("clock", lambda: build_clock_graph(lambda: 1000)),
])
def test_graph_diagram_is_unchanged(name, graph):
    drawn = graph().get_graph().draw_mermaid()
    path = SNAPSHOTS / f"{name}.mmd"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.write_text(drawn)
    assert path.exists(), f"no snapshot {path.name}; create it with UPDATE_SNAPSHOTS=1"
    assert drawn == path.read_text(), f"{name} graph changed; review and rerun with UPDATE_SNAPSHOTS=1"


@pytest.mark.parametrize("graph, fields", [
    (lambda: build_agent_graph(lambda: 1000), {"messages", "status", "turn_usage"}),
    (build_gate_graph, {"call", "route", "blocked", "messages"}),
    (lambda: build_subagent_graph(lambda: 1000), {"messages", "max_rounds"}),
    (lambda: build_clock_graph(lambda: 1000), {"messages", "run_id", "synthesis"}),
])
def test_graph_schemas_build_on_the_oldest_supported_python(graph, fields):
    """Studio's input form and chat view read these; with `typing.TypedDict` pydantic refuses them before 3.12."""
    compiled = graph()
    assert fields <= set(compiled.get_input_jsonschema()["properties"])
    assert "messages" in compiled.get_output_jsonschema()["properties"]
