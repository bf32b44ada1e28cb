"""The flow's engine-free parts (services/flow): round robin within the bounds, the batch's text, whose
rights a batch has, token buckets and notices on a clock the test drives, and their bounded state."""

from __future__ import annotations

import pytest

from core.settings import Settings
from services.flow import Buckets, Notices, batch_text, least_privileged, take_batch
from services.flow.bucket import PRUNE_AT


def take(items: list[tuple[str, str]], **kw: int) -> tuple[list[str], list[str]]:
    taken, left = take_batch(items, lambda m: m[0], lambda m: len(m[1]), **kw)
    return [t for _, t in taken], [t for _, t in left]


def test_round_robin_by_sender_keeps_arrival_order_and_the_bounds():
    items = [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("a", "a4"), ("c", "c1"), ("b", "b2")]
    assert take(items, max_messages=3, max_runes=1000) == (["a1", "b1", "c1"], ["a2", "a3", "a4", "b2"])
    assert take(items, max_messages=5, max_runes=1000) == (["a1", "a2", "b1", "c1", "b2"], ["a3", "a4"])
    assert take(items, max_messages=100, max_runes=1000) == ([t for _, t in items], [])


def test_the_rune_bound_ends_a_senders_share_and_the_first_message_always_fits():
    items = [("a", "x" * 50), ("b", "y" * 10), ("a", "z" * 5), ("c", "w" * 30)]
    assert take(items, max_messages=10, max_runes=20) == (["x" * 50], ["y" * 10, "z" * 5, "w" * 30])
    assert take(items[1:], max_messages=10, max_runes=20) == (["y" * 10, "z" * 5], ["w" * 30])
    assert take([], max_messages=3, max_runes=10) == ([], [])


def test_batch_text_is_stable_and_a_single_message_reads_as_before():
    assert batch_text([("42", 0.0, "hello")]) == "hello"
    two = [("42", 3661.0, "user42: hi"), ("43", 3662.5, "user43: line one\nline two")]
    assert batch_text(two) == ("[2 messages arrived for you since your last reply, oldest first; answer them "
                               "together]\n[1] 01:01:01 UTC [42] user42: hi\n[2] 01:01:02 UTC [43] user43: line one\n"
                               "line two")
    assert batch_text(two) == batch_text(list(two))


def test_least_privileged_author():
    admins = {"900", "901"}.__contains__
    assert least_privileged(["900", "42"], admins) == "42"
    assert least_privileged(["42", "900"], admins) == "42"
    assert least_privileged(["42", "900", "43", "901"], admins) == "43"
    assert least_privileged(["900", "901"], admins) == "901"


def test_token_bucket_on_a_driven_clock():
    now = [0.0]
    buckets = Buckets(lambda: now[0])
    key = ("g:1", "42")
    assert [buckets.take(key, 1.0, 3) for _ in range(5)] == [True, True, True, False, False]
    now[0] = 1.0
    assert [buckets.take(key, 1.0, 3) for _ in range(2)] == [True, False]
    now[0] = 100.0  # refills to the burst, not beyond
    assert [buckets.take(key, 1.0, 3) for _ in range(4)] == [True, True, True, False]
    assert buckets.take(("g:1", "43"), 1.0, 3) and buckets.take(("g:2", "42"), 1.0, 3)  # per chat, per member


def test_notices_once_per_window():
    now = [0.0]
    notices = Notices(lambda: now[0])
    key = ("g:1", "42")
    assert [notices.due(key, 60) for _ in range(3)] == [True, False, False]
    now[0] = 59.0
    assert not notices.due(key, 60)
    now[0] = 60.0
    assert notices.due(key, 60) and notices.due(("g:1", "43"), 60)


def test_bucket_and_notice_state_stays_bounded():
    now = [0.0]
    buckets, notices = Buckets(lambda: now[0]), Notices(lambda: now[0])
    for i in range(PRUNE_AT + 10):
        now[0] += 1.0
        buckets.take(("g:1", str(i)), 1.0, 3)
        notices.due(("g:1", str(i)), 5.0)
    assert len(buckets) < PRUNE_AT and len(notices) < PRUNE_AT


def test_flow_settings_defaults_and_bad_values():
    flow = Settings().flow
    assert (flow.settle_sec, flow.max_batch_messages, flow.max_batch_runes, flow.max_queue, flow.member_rate_per_min,
            flow.member_burst, flow.notice_window_sec) == (0.0, 20, 16_000, 50, 20.0, 5, 60.0)
    with pytest.raises(ValueError, match="max_queue"):
        Settings(flow={"max_queue": 0})
