"""Every change made from the panel is one operation-log row with the actor `panel` (the same table and
reader as the chat's changes: services/store.py `log_op`, `ania logs ops`)."""

from __future__ import annotations

from typing import Any

from ania.panel.context import PanelContext

ACTOR = "panel"


def record_panel_op(ctx: PanelContext, kind: str, detail: dict[str, Any]) -> None:
    """`detail` must hold no secret (mask it first): the log is shown on the ops page and by `ania logs`."""
    ctx.services.store.log_op(kind, "", ACTOR, detail)
