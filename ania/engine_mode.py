"""Which code runs the engine: Ania's faster copies of library internals (the default), or the libraries'
own (`engine.stock = true`, `ANIA_ENGINE__STOCK=1`; docs/ARCHITECTURE.md, "Copied internals").

`engine_mode(settings)` decides for the bot, Studio's engine and the tests' engines: in the fast mode it
first checks that the installed libraries are in the ranges the copies were checked against
(services/versions.py) and fails at start with one line otherwise. `stock_mode(config_dir)` decides the
same for the commands that read stored sessions without loading the settings (`ania sessions`, Studio's
checkpointer and graphs): it reads only the switch, from the environment, then `[engine]` of ania.toml
(skipped when the file is not valid TOML: `ania sessions` reads sessions whatever the settings), parsed by
the same settings model. Either mode reads the sessions the other stored.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from core.errors import ConfigError
from core.settings import CONFIG_FILE, EngineSettings, Settings, env_name
from core.settings.check import given_value
from services.versions import VersionOf, check_versions

KEY = "engine.stock"


def engine_mode(settings: Settings, version_of: VersionOf | None = None) -> bool:
    """True for the stock mode; the fast mode's version check raises `ConfigError` (one line)."""
    return _checked(settings.engine, version_of)


def _checked(engine: EngineSettings, version_of: VersionOf | None) -> bool:
    if not engine.stock:
        check_versions(version_of)
    return engine.stock


def stock_mode(config_dir: Path, version_of: VersionOf | None = None) -> bool:
    """`engine_mode` from the switch alone (the environment variable wins over the file, as in `Settings`)."""
    path = config_dir / CONFIG_FILE
    given = given_value(path, KEY)
    try:
        engine = EngineSettings.model_validate({} if given is None else {"stock": given})
    except ValidationError:
        raise ConfigError(f"invalid setting {KEY}={given!r} (from {env_name(KEY)} or {path}): true or false") from None
    return _checked(engine, version_of)
