"""Settings: ania.toml, ANIA_<SECTION>__<KEY> overrides, the key registry, clear errors and warnings."""

from __future__ import annotations

import logging

import pytest

from core.errors import ConfigError
from core.settings import Paths, load_settings, registry, require_llm


@pytest.fixture(autouse=True)
def _no_ania_env(monkeypatch):
    """The developer's own ANIA_* variables must not leak into these tests."""
    import os

    for name in [k for k in os.environ if k.upper().startswith("ANIA_")]:
        monkeypatch.delenv(name)


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
    assert str(e.value) == (f"invalid setting llm.timeout_sec from ANIA_LLM__TIMEOUT_SEC (overrides "
                            f"{tmp_path / 'ania.toml'}): Input should be greater than 0 (got '-1')")
    monkeypatch.delenv("ANIA_LLM__TIMEOUT_SEC")
    with pytest.raises(ConfigError, match=r"missing setting llm\.base_url: set it in /.*/ania\.toml \(not there"):
        require_llm(load_settings(tmp_path))
    (tmp_path / "ania.toml").write_text('[llm]\nbase_url = "http://x/v1"\n')
    with pytest.raises(ConfigError) as e:
        require_llm(load_settings(tmp_path))
    assert str(e.value).startswith(f"missing setting llm.model: set it in {tmp_path / 'ania.toml'} under [llm] or as "
                                   "ANIA_LLM__MODEL")
    (tmp_path / "ania.toml").write_text("[llm\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_settings(tmp_path)


def test_invalid_value_in_the_file_names_key_line_and_env(tmp_path):
    (tmp_path / "ania.toml").write_text('# settings\n\n[bot]\nadmins = ["1"]\n\n[agent]\nmax_rounds = 0\n')
    with pytest.raises(ConfigError) as e:
        load_settings(tmp_path)
    assert str(e.value) == (f"invalid setting agent.max_rounds in {tmp_path / 'ania.toml'}:7 (env ANIA_AGENT__MAX_ROUNDS): "
                            "Input should be greater than or equal to 1 (got '0')")


def test_a_secret_value_is_never_shown(tmp_path, monkeypatch):
    (tmp_path / "ania.toml").write_text("[llm]\napi_key = [1, 2]\n")
    with pytest.raises(ConfigError) as e:
        load_settings(tmp_path)
    assert "llm.api_key" in str(e.value) and "got" not in str(e.value)


@pytest.mark.parametrize(("value", "problem"), [("[bad", "not valid JSON (Expecting value at column 2 of '[bad')"),
                                                ('"^ls"', "Input should be a valid list (got '^ls')")])
def test_a_list_in_the_environment_must_be_json(tmp_path, monkeypatch, value, problem):
    """It used to end in a pydantic_settings SettingsError traceback naming no key."""
    monkeypatch.setenv("ANIA_BASH__WHITELIST", value)
    with pytest.raises(ConfigError) as e:
        load_settings(tmp_path)
    assert str(e.value).startswith(f"invalid setting bash.whitelist from ANIA_BASH__WHITELIST (overrides "
                                   f"{tmp_path / 'ania.toml'}): {problem}")
    assert "\n" not in str(e.value)


def test_unknown_keys_and_sections_are_warned_with_file_line_and_closest_key(tmp_path, caplog):
    path = tmp_path / "ania.toml"
    path.write_text('timeout = 1\n[llm]\nbase_url = "http://x/v1"\nmodle = "m"\nbogus_key = 1\n\n[agnet]\n'
                    'max_rounds = 3\n\n[bot]\nmax_rounds = 4\n')
    with caplog.at_level(logging.WARNING, logger="core.settings"):
        settings = load_settings(tmp_path)
    assert settings.llm.base_url == "http://x/v1" and settings.agent.max_rounds == 20  # the rest still loads
    assert caplog.messages == [
        f"{path}:1: unknown key timeout outside any [section] (ignored); did you mean llm.timeout_sec?",
        f"{path}:4: unknown key llm.modle (ignored); did you mean llm.model?",
        f"{path}:5: unknown key llm.bogus_key (ignored); keys of [llm]: api_key, base_url, max_concurrent_calls, "
        "max_retries, model, temperature, timeout_sec, vision",
        f"{path}:7: unknown section [agnet] (ignored); did you mean [agent]?",
        f"{path}:11: unknown key bot.max_rounds (ignored); did you mean agent.max_rounds?",
    ]


def test_dotted_keys_and_unknown_environment_variables(tmp_path, monkeypatch, caplog):
    (tmp_path / "ania.toml").write_text('llm.model = "m"\nllm.modle = "x"\n')
    monkeypatch.setenv("ANIA_LLM__MODLE", "x")
    monkeypatch.setenv("ania_llm_model", "y")  # one underscore: not a setting
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp_path))  # the directories are not settings, and fine
    monkeypatch.setenv("ANIA_SOMETHING_ELSE", "z")  # nothing like a setting: not ours to judge
    with caplog.at_level(logging.WARNING, logger="core.settings"):
        assert load_settings(tmp_path).llm.model == "m"
    assert caplog.messages == [
        f"{tmp_path / 'ania.toml'}:2: unknown key llm.modle (ignored); did you mean llm.model?",
        "environment variable ANIA_LLM_MODEL is not a setting (ignored); did you mean ANIA_LLM__MODEL?",
        "environment variable ANIA_LLM__MODLE is not a setting (ignored); did you mean ANIA_LLM__MODEL?",
    ]


def test_a_missing_config_dir_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp_path / "typo"))
    assert Paths.from_env().config_dir == tmp_path / "typo"  # unchecked: Studio and tests build paths freely
    with pytest.raises(ConfigError) as e:
        Paths.from_env(check=True)
    assert str(e.value).startswith(f"the config dir {tmp_path / 'typo'} (ANIA_CONFIG_DIR=")
    (tmp_path / "typo").write_text("a file, not a directory")
    with pytest.raises(ConfigError):
        Paths.from_env(check=True)
    monkeypatch.delenv("ANIA_CONFIG_DIR")
    monkeypatch.chdir(tmp_path)
    assert Paths.from_env(check=True).config_dir == tmp_path / "config"  # the default may be missing
