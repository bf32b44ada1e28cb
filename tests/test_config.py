"""Settings: ania.toml, ANIA_<SECTION>__<KEY> overrides, the key registry, clear errors."""

from __future__ import annotations

import pytest

from services.config import load_settings, registry, require_llm
from services.errors import ConfigError


def test_file_then_environment(tmp_path, monkeypatch):
    (tmp_path / "ania.toml").write_text('[llm]\nbase_url = "http://x/v1"\nmodel = "m"\n[bot]\nadmins = [1, "2"]\n')
    monkeypatch.setenv("ANIA_AGENT__MAX_ROUNDS", "7")
    monkeypatch.setenv("ANIA_BASH__BLACKLIST", '["rm\\\\s"]')
    monkeypatch.setenv("ANIA_LLM__MODEL", "from-env")
    s = load_settings(tmp_path)
    assert (s.llm.base_url, s.llm.model, s.agent.max_rounds) == ("http://x/v1", "from-env", 7)
    assert s.bot.admins == ["1", "2"] and s.bash.blacklist == ["rm\\s"]
    assert s.bot.msg_event_timeout_sec == 300 and s.approval.effective_timeout == 120


def test_registry_names_every_key_with_description_and_sensitivity():
    keys = {k.key: k for k in registry()}
    assert keys["llm.api_key"].sensitive and not keys["llm.base_url"].sensitive
    assert keys["llm.api_key"].env == "ANIA_LLM__API_KEY"
    assert all(k.description for k in keys.values())
    assert list(keys) == sorted(keys)
    for needed in ("llm.timeout_sec", "llm.max_retries", "bot.admins", "bot.msg_event_timeout_sec",
                   "agent.max_rounds", "agent.context_tokens"):
        assert needed in keys


def test_invalid_and_missing_settings_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("ANIA_LLM__TIMEOUT_SEC", "-1")
    with pytest.raises(ConfigError) as e:
        load_settings(tmp_path)
    assert str(e.value).startswith("invalid setting llm.timeout_sec (ANIA_LLM__TIMEOUT_SEC):")
    assert "\n" not in str(e.value)
    monkeypatch.delenv("ANIA_LLM__TIMEOUT_SEC")
    with pytest.raises(ConfigError, match=r"missing setting llm\.base_url"):
        require_llm(load_settings(tmp_path))
    (tmp_path / "ania.toml").write_text("[llm\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_settings(tmp_path)
