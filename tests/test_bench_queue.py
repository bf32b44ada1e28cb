"""bench/bench_queue.py counts what it claims: a chat's jobs that overlap or run out of order, jobs lost or run
twice (its figures are printed, never asserted: no wall-clock time in a test)."""

from __future__ import annotations

from bench.bench_queue import judge


def test_overlaps_order_lost_and_repeated_jobs_are_counted() -> None:
    # [phase, key, seq, deferred, start, end]
    records = [
        ["burst", "a", 0, 0.0, 1.0, 2.0], ["burst", "a", 1, 0.0, 2.0, 3.0],   # one after the other: fine
        ["burst", "b", 0, 0.0, 1.0, 2.0], ["burst", "b", 1, 0.0, 1.5, 2.5],   # b1 starts before b0 ends
        ["burst", "c", 1, 0.0, 1.0, 2.0], ["burst", "c", 0, 0.0, 3.0, 4.0],   # c1 ran before c0
        ["paced", "a", 2, 5.0, 5.1, 5.2], ["paced", "a", 2, 5.0, 6.0, 6.1],   # a2 ran twice
        ["paced", "b", 2, 5.0, 5.3, 5.4],
    ]
    result = judge("side", records, {"burst": 6, "paced": 3}, defer_s=2.0)  # the third paced job never ran
    assert (result.overlaps, result.out_of_order, result.lost, result.repeated) == (1, 1, 1, 1)
    assert result.defer_per_s == 3.0 and result.jobs_per_s == 2.0  # 6 burst jobs from start 1.0 to end 4.0
    assert round(result.paced_ms[0]) == 300  # starts 0.1, 1.0 and 0.3 s after their defer
