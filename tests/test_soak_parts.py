"""The soak harness's own parts (bench/soak): a seed names one run, every fault is in a short run, and the
scripted model fails a message the planned number of times and then answers it by its marker."""

from __future__ import annotations

from ania.fakes.faults import Raw
from ania.fakes.script import Calls, Fail, Reply, Stall
from bench.soak.checks import in_flight, outcomes
from bench.soak.model import SoakModel, markers_of
from bench.soak.traffic import LINK_FAULTS, PROCESS_FAULTS, make_plan


def body(user: str, *after: dict[str, object]) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": user}, *after], "tools": [{"function": {"name": "x"}}]}


def test_a_seed_names_one_plan_and_a_two_minute_run_has_every_fault():
    a, b = make_plan(26, 120, 4, 2), make_plan(26, 120, 4, 2)
    assert a == b and a != make_plan(27, 120, 4, 2)
    assert {f.kind for f in a.faults} == {*LINK_FAULTS, *PROCESS_FAULTS}
    markers = [m.marker for m in a.messages if m.marker]
    assert len(markers) == len(set(markers))
    assert all(f.at <= 0.45 * 120 for f in a.faults if f.kind == "kill9")  # the last half is one process


def test_the_model_fails_as_planned_then_answers_by_marker():
    model = SoakModel(hang_sec=9)
    assert isinstance(model(body("#m1 fault=500x2")), Fail)
    assert isinstance(model(body("#m1 fault=500x2")), Fail)
    assert model(body("#m1 fault=500x2")) == Reply("ok #m1", delay=0.09)
    assert isinstance(model(body("#m2 fault=429")), Raw) and isinstance(model(body("#m3 fault=hang")), Stall)
    first = model(body("[42] user42: #m4 do=kb\\n[replying to you (the bot): ok #m3]"))
    assert isinstance(first, Calls) and first.calls[0][0] == "kb_add"
    assert markers_of("#m4 hi\\n[replying to you (the bot): ok #m3]") == ["#m4"]
    done = model(body("#m5 do=time", {"role": "assistant", "tool_calls": [{"id": "c"}]}, {"role": "tool"}))
    assert done == Reply("ok #m5", delay=0.25)
    assert model({"messages": [{"role": "user", "content": "soak subagent: answer ok"}]}) == Reply("ok", delay=0.05)


def test_outcomes_count_a_loss_a_double_a_notice_and_a_message_in_flight_at_a_kill():
    record = {
        "messages": [{"marker": f"#m{i}", "chat": "g:1", "kind": "mention", "at": float(i * 10), "delivered": True}
                     for i in range(1, 6)],
        "replies": [{"chat": "g:1", "text": "ok #m1", "at": 10.5}, {"chat": "g:1", "text": "ok #m2", "at": 20.5},
                    {"chat": "g:1", "text": "ok #m2", "at": 21.0},
                    {"chat": "g:1", "text": "Sorry, the model gave an empty answer.", "at": 30.4}],
        "closes": [50.3],
    }
    rows = [{"session": "g:1", "input": "#m3 fault=empty", "status": "success", "started": 30.1,
             "reply": "Sorry, the model gave an empty answer."},
            {"session": "g:1", "input": "#m4 hi", "status": "success", "started": 40.1, "reply": "ok #m4"}]
    out = outcomes(record, rows, kills=[50.2])
    assert out["doubled"] == ["#m2"]
    assert out["category"] == {"#m1": "replied", "#m2": "replied", "#m3": "replied", "#m4": "lost",
                               "#m5": "in flight at a kill -9"}
    assert in_flight(49.5, [50.2], [50.3]) and not in_flight(48.0, [50.2], [50.3])
