"""Retention (`ania sessions prune`, the panel's sessions page): checkpoints and query rows older than a
cut-off go, sessions with a turn under way are only trimmed (checkpoints/maintenance.py decides what a
session keeps)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from langgraph.checkpoint.base import BaseCheckpointSaver

from checkpoints.maintenance import PruneReport, prune_threads, vacuum
from services.store import AppStore
from services.usage import QueryLog


@dataclass(frozen=True)
class Pruned:
    report: PruneReport
    query_rows: int
    #: False when the checkpoint file was not compacted afterwards (another process held it).
    vacuumed: bool = True


async def prune_stored(saver: BaseCheckpointSaver[str], store: AppStore | None, queries: QueryLog | None,
                       before: datetime, *, dry_run: bool = False) -> Pruned:
    """Delete (or with `dry_run` count) what is older than `before`; `store`/`queries` None: no app store yet."""
    rows, running = 0, set()
    if store is not None and queries is not None:
        running = {r["session"] for r in store.query("SELECT DISTINCT session FROM query_log WHERE status = 'running'")}
        rows = queries.prune(before.timestamp(), dry_run=dry_run)
    report = await prune_threads(saver, before, dry_run=dry_run, running=running)
    vacuumed = True
    if not dry_run and report.checkpoints:
        vacuumed = await vacuum(saver)
    return Pruned(report, rows, vacuumed)
