"""The soak harness's own parts (bench/soak): a seed names one run, every fault is in a short run, and the
scripted model fails a message the planned number of times and then answers it by its marker."""

from __future__ import annotations

from ania.fakes.faults import Raw
from ania.fakes.script import Calls, Fail, Reply, Stall
from bench.soak import ledger
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


def test_a_batch_answers_each_of_its_messages_and_refusals_and_stops_are_outcomes():
    """The flow (issue 23): one reply names every marker of its batch and quotes its last message; the
    query log's `message_ids` account for messages whose input it does not show; `rate_limited`,
    `queue_full` and `stopped` rows are outcomes; a message in two rows, a wrong quote and two notices to
    one member within a window (no restart between) are each found."""
    sent = [{"marker": f"#m{i}", "chat": "g:1", "kind": "mention", "at": float(i), "delivered": True,
             "mid": str(100 + i)} for i in range(1, 8)]
    record = {"messages": sent, "closes": [],
              "replies": [{"chat": "g:1", "text": "ok #m1 #m2", "at": 2.5, "quote": "102"},
                          {"chat": "g:1", "text": "ok #m3", "at": 3.5, "quote": ""},
                          {"chat": "g:1", "text": "ok #m6", "at": 6.5, "quote": "101"}]}
    rows = [{"id": 1, "session": "g:1", "sender": "40", "input": "[2 messages arrived ...]", "status": "success",
             "started": 2.1, "reply": "ok #m1 #m2", "message_ids": ["101", "102"], "senders": ["40", "41"]},
            {"id": 2, "session": "g:1", "sender": "40", "input": "x", "status": "rate_limited", "started": 4.0,
             "reply": "You are sending", "message_ids": ["104"], "senders": ["40"]},
            {"id": 3, "session": "g:1", "sender": "40", "input": "y", "status": "stopped", "started": 5.0,
             "reply": "", "message_ids": ["105"], "senders": ["40"]},
            {"id": 4, "session": "g:1", "sender": "40", "input": "z", "status": "rate_limited", "started": 30.0,
             "reply": "You are sending", "message_ids": ["105"], "senders": ["40"]}]
    out = outcomes(record, rows, kills=[])
    assert out["category"] == {"#m1": "replied", "#m2": "replied", "#m3": "replied", "#m4": "settled: rate_limited",
                               "#m5": "settled: rate_limited/stopped", "#m6": "replied", "#m7": "lost"}
    by_id = ledger.marker_by_id(record)
    assert ledger.twice_in_log(rows, by_id) == ["#m5"]
    tally, wrong = ledger.quotes(record)
    assert tally == {"batch of several": 1, "none": 1, "wrong": 1} and wrong == ["#m6 quoted #m1"]
    assert ledger.notices_per_window(rows, 60.0, kills=[]) == (2, 2, ["40 in g:1"])
    assert ledger.notices_per_window(rows, 60.0, kills=[10.0]) == (2, 2, [])


def test_a_batchs_notice_answers_every_message_of_the_batch():
    """Found by seed 11: a batch whose answer is a notice (the model's empty answer) gave it to one of its
    messages only, and the other counted as lost."""
    sent = [{"marker": m, "chat": "g:1", "kind": "mention", "at": 1.0, "delivered": True, "mid": mid}
            for m, mid in (("#m8", "108"), ("#m15", "115"))]
    notice = "Sorry, the model gave an empty answer."
    record = {"messages": sent, "closes": [], "replies": [{"chat": "g:1", "text": notice, "at": 2.5, "quote": "115"}]}
    rows = [{"id": 1, "session": "g:1", "sender": "40", "input": "[2 messages arrived ...]", "status": "success",
             "started": 2.1, "reply": notice, "message_ids": ["108", "115"], "senders": ["40", "41"]}]
    assert outcomes(record, rows, kills=[])["category"] == {"#m8": "replied", "#m15": "replied"}


def test_a_refusal_notice_without_its_row_is_counted_as_refused_while_writes_were():
    """Found by seed 5: a message rate-limited while the data directory refused writes got its notice (quoting
    it) and no row; it is refused, not lost. A message with neither stays lost."""
    sent = [{"marker": m, "chat": "g:1", "kind": "mention", "at": 1.0, "delivered": True, "mid": mid}
            for m, mid in (("#m36", "1090"), ("#m37", "1091"))]
    notice = "You are sending messages faster than I can answer: more than 20 a minute in this chat are not answered."
    record = {"messages": sent, "closes": [], "replies": [{"chat": "g:1", "text": notice, "at": 1.1, "quote": "1090"}]}
    out = outcomes(record, [], kills=[])
    assert out["category"] == {"#m36": "refusal notice, no row (writes refused)", "#m37": "lost"}


def test_a_turn_left_running_by_refused_writes_answers_its_whole_batch_with_its_notice():
    """Found by the 30-minute run (seed 26, #m852 and #m858): a batch's turn failed while writes were refused;
    its row stayed `running` and its notice quoted the batch's last message. Both messages have that answer."""
    sent = [{"marker": m, "chat": "g:5", "kind": "mention", "at": at, "delivered": True, "mid": mid}
            for m, at, mid in (("#m852", 1.0, "3198"), ("#m858", 8.0, "3213"))]
    notice = "Sorry, something went wrong on my side (OperationalError); the error is in the log. Please try again."
    record = {"messages": sent, "closes": [], "replies": [{"chat": "g:5", "text": notice, "at": 13.0, "quote": "3213"}]}
    rows = [{"id": 1, "session": "g:5", "sender": "40", "input": "[2 messages arrived ...]", "status": "running",
             "started": 12.0, "reply": "", "message_ids": ["3198", "3213"], "senders": ["40", "48"]}]
    out = outcomes(record, rows, kills=[])
    assert out["category"] == dict.fromkeys(("#m852", "#m858"), "failure notice, no row (writes refused)")
    assert out["lost"] == []


def test_a_message_waiting_on_a_locked_store_at_a_kill_is_unrecorded_not_lost():
    """Found by the 30-minute run (#m587-#m590): another process held the SQLite lock, so the bot could not
    record the messages that arrived meanwhile, and a kill -9 came before it caught up. Counted apart; the
    same message with no lock, or with the kill long after the lock's end, is lost."""
    sent = [{"marker": "#m1", "chat": "g:1", "kind": "mention", "at": 11.0, "delivered": True, "mid": "1"}]
    record = {"messages": sent, "closes": [], "replies": []}
    assert outcomes(record, [], kills=[15.5], locked=[(10.0, 13.0)])["category"] == {
        "#m1": "unrecorded at a kill -9 (store locked)"}
    assert outcomes(record, [], kills=[15.5])["lost"] and outcomes(record, [], kills=[30.0], locked=[(10.0, 13.0)])["lost"]
