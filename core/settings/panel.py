"""`[panel]`: the operator's web panel (ania/panel): whether it starts, where it listens, how long a login lasts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class PanelSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    enable: Literal["auto", "on", "off"] = Field(
        "auto", description="Start the web panel with the bot: auto = with `ania serve` but not `ania chat`; "
                            "on = with both; off = never (`ania panel` runs it alone)")
    listen: str = Field(
        "127.0.0.1:6190", description="host:port the panel listens on; beyond loopback it needs a password "
                                      "(`ania panel --set-password`) and TLS in front")
    public_url: str = Field(
        "", description="The panel's address as browsers see it behind a TLS proxy, e.g. https://panel.example.com "
                        "(its origin and host are accepted besides the listen address)")
    session_hours: float = Field(12.0, gt=0, le=24 * 30, description="How long a login lasts without use")
    login_attempts_per_minute: int = Field(
        5, ge=1, le=100, description="Failed logins allowed per client address per minute (then refused for a minute)")
