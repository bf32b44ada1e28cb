"""Where the stored state lives, for the commands that read it without loading the settings (`ania sessions`,
Studio's checkpointer and thread mapping): `cluster.postgres_url` from the environment
(`ANIA_CLUSTER__POSTGRES_URL`), then `[cluster]` of ania.toml, as `stock_mode` reads `engine.stock`. A file that
is not valid TOML counts as no URL (its sessions are still read from the data directory). Empty: SQLite."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from core.errors import ConfigError
from core.settings import CONFIG_FILE, env_name
from core.settings.check import given_value
from core.settings.cluster import SETTING, ClusterSettings


def state_url(config_dir: Path) -> str:
    """The Postgres URL that holds the bot's state, or "" for the data directory's SQLite files."""
    path = config_dir / CONFIG_FILE
    given = given_value(path, SETTING)
    try:
        return ClusterSettings.model_validate({} if given is None else {"postgres_url": given}).postgres_url
    except ValidationError:  # the value is a secret: never repeated
        raise ConfigError(f"invalid setting {SETTING} (from {env_name(SETTING)} or {path}): must be empty or a "
                          "postgresql://user:password@host:port/database URL") from None
