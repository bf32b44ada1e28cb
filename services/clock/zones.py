"""Which timezone a schedule is read in: `clock.timezone`, else the machine's (tzlocal, an APScheduler dependency)."""

from __future__ import annotations

import logging
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tzlocal

log = logging.getLogger(__name__)


def local_zone(name: str = "", *, strict: bool = False) -> ZoneInfo:
    """The zone `name`, or the machine's for "". A stored task's zone is `strict`: an unknown name raises
    ValueError (the task is reported as broken); otherwise the machine's zone, else UTC, is used."""
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            if strict:
                raise ValueError(f"unknown timezone {name!r}") from None
            log.warning("unknown timezone %r; using the machine's", name)
    try:
        return ZoneInfo(tzlocal.get_localzone_name() or "UTC")
    except (ZoneInfoNotFoundError, ValueError, LookupError):
        return ZoneInfo("UTC")
