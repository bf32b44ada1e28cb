"""What every page handler reaches: the engine (its services change at a reboot, so always through
`ctx.engine.services`), the reboot seam and the login state. Held on `app.state`, never a module global."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.requests import Request

from ania.engine import Engine
from ania.panel.auth import PanelAuth
from services.container import Services


@dataclass
class PanelContext:
    engine: Engine
    #: Restart the engine from the config files as they are now (ania/entry.py `MessageEntry.reboot` when a
    #: bot runs, else `Engine.reboot`); returns the line to show. None: the page says a reboot is not possible here.
    reboot: Callable[[], Awaitable[str]] | None
    auth: PanelAuth
    #: Origins (scheme://host[:port]) that are the panel's own besides the request's own host (panel.public_url).
    extra_origins: tuple[str, ...] = ()
    #: What runs beside the panel: "serve", "chat" or "alone" (`ania panel`); the overview shows it.
    mode: str = "alone"
    #: Whether the chat platform is connected, for the overview (None: no platform runs beside the panel).
    platform_connected: Callable[[], bool] | None = None
    started: float = field(default=0.0)

    @property
    def services(self) -> Services:
        return self.engine.services


def panel_context(request: Request) -> PanelContext:
    ctx: PanelContext = request.app.state.panel
    return ctx
