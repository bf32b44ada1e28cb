"""The configuration files a cluster shares (services/configure/shared.py), on a real Postgres: the gateway's
`config/` is the cluster's, so its hand edits are published and never overwritten, an invalid hand edit stays
on the gateway (it would stop every worker at its next start), a worker's hand edit gives way to the table
with a warning, and a name that is not a configuration file is never written."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.configure.shared import SharedConfig
from services.store import AppStore
from services.store_pg import PostgresBackend
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures

HOOKS = '{"hooks": []}\n'
PROMPT = '[bot]\nsystem_prompt = "Speak like a pirate."\n'


@pytest.fixture
def store(pg_url: str) -> Iterator[AppStore]:  # noqa: F811
    s = AppStore(backend=PostgresBackend(pg_url))
    yield s
    s.close()


def process(store: AppStore, tmp_path: Path, name: str) -> tuple[SharedConfig, Path]:
    """One process's view: its own config/ directory on the shared store."""
    folder = tmp_path / name
    folder.mkdir()
    return SharedConfig(store, folder), folder


def test_a_hand_edit_on_the_gateway_reaches_a_worker_and_survives_the_chats_edits(
        store: AppStore, tmp_path: Path) -> None:
    gateway, gdir = process(store, tmp_path, "gateway")
    worker, wdir = process(store, tmp_path, "worker")
    (gdir / "ania.toml").write_text('[bot]\nsystem_prompt = "Be brief."\n')
    assert gateway.publish_all() == ["ania.toml"]
    assert worker.pull() == ["ania.toml"]

    (gdir / "ania.toml").write_text(PROMPT)  # by hand on the gateway
    assert gateway.publish_edits() == ["ania.toml"]
    assert gateway.publish_edits() == []  # once
    assert worker.pull() == ["ania.toml"] and (wdir / "ania.toml").read_text() == PROMPT

    # Edited by hand again, and the chat on the worker writes hooks.json before the gateway's watch looks:
    # the gateway's pull takes hooks.json and keeps (and publishes) its own ania.toml.
    edited = PROMPT.replace("pirate", "poet")
    (gdir / "ania.toml").write_text(edited)
    (wdir / "hooks.json").write_text(HOOKS)
    worker.publish("hooks.json", HOOKS)
    assert gateway.pull(local_wins=True) == ["hooks.json"]
    assert (gdir / "ania.toml").read_text() == edited and (gdir / "hooks.json").read_text() == HOOKS
    assert worker.pull() == ["ania.toml"] and (wdir / "ania.toml").read_text() == edited


def test_an_invalid_hand_edit_stays_on_the_gateway_with_one_warning(
        store: AppStore, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    gateway, gdir = process(store, tmp_path, "gateway")
    worker, wdir = process(store, tmp_path, "worker")
    (gdir / "ania.toml").write_text(PROMPT)
    (gdir / "hooks.json").write_text(HOOKS)
    gateway.publish_all()
    worker.pull()

    (gdir / "ania.toml").write_text("[bot\nsystem_prompt = ")  # not TOML
    (gdir / "hooks.json").write_text('{"hooks": [{"event": "no such event"}]}')
    with caplog.at_level(logging.WARNING, logger="services.configure.shared"):
        assert gateway.publish_edits() == []
        assert gateway.publish_edits() == []
        assert gateway.pull(local_wins=True) == []  # the table's copy does not overwrite the edit either
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings  # one per file, not one per look
    assert any("ania.toml" in w and "not valid TOML" in w for w in warnings), warnings
    assert any("hooks.json" in w for w in warnings), warnings
    assert worker.pull() == [] and (wdir / "ania.toml").read_text() == PROMPT
    assert (gdir / "ania.toml").read_text() == "[bot\nsystem_prompt = "  # the operator's text is kept to fix


def test_a_hand_edit_on_a_worker_gives_way_to_the_cluster_with_a_warning(
        store: AppStore, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    gateway, gdir = process(store, tmp_path, "gateway")
    worker, wdir = process(store, tmp_path, "worker")
    (gdir / "ania.toml").write_text(PROMPT)
    gateway.publish_all()
    worker.pull()
    (wdir / "ania.toml").write_text('[bot]\nsystem_prompt = "mine"\n')
    (gdir / "ania.toml").write_text(PROMPT + "# v2\n")
    gateway.publish_edits()
    with caplog.at_level(logging.WARNING, logger="services.configure.shared"):
        assert worker.pull() == ["ania.toml"]
    assert (wdir / "ania.toml").read_text() == PROMPT + "# v2\n"
    assert any("ania.toml was edited by hand" in r.getMessage() and "replaced" in r.getMessage()
               for r in caplog.records), caplog.text


def test_a_rebuilt_gateway_does_not_publish_a_stale_copy_over_the_chats_edit(store: AppStore, tmp_path: Path) -> None:
    """After a /reboot the services (and this object) are new: a file that differs from the table then was
    not edited here, so the table's copy is taken, not overwritten."""
    gateway, gdir = process(store, tmp_path, "gateway")
    worker, _ = process(store, tmp_path, "worker")
    (gdir / "hooks.json").write_text(HOOKS)
    gateway.publish_all()
    worker.pull()
    newer = '{"hooks": [], "note": "from the chat"}\n'
    worker.publish("hooks.json", newer)  # lands while the gateway rebuilds
    rebuilt = SharedConfig(store, gdir)
    assert rebuilt.publish_edits() == []
    assert rebuilt.pull(local_wins=True) == ["hooks.json"] and (gdir / "hooks.json").read_text() == newer


def test_a_row_that_names_no_configuration_file_is_never_written(store: AppStore, tmp_path: Path) -> None:
    worker, _ = process(store, tmp_path, "worker")
    for name in ("../escape.toml", "run.sh", "ania.toml/../../x"):
        store.write("INSERT INTO config_files (name, text, sha, updated) VALUES (?, ?, ?, ?)",
                    [name, "boom", "0", 1.0])
    assert worker.pull() == []
    assert worker.publish_edits() == []
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["worker"]


def test_a_hand_edit_after_a_rebuild_is_still_told_from_a_stale_copy(store: AppStore, tmp_path: Path) -> None:
    """What a process synced survives the rebuild of its services (Engine.reboot carries it over): an invalid
    hand edit made just after a /reboot stays on the gateway, not replaced by the table's copy."""
    gateway, gdir = process(store, tmp_path, "gateway")
    (gdir / "ania.toml").write_text(PROMPT)
    gateway.publish_all()
    rebuilt = SharedConfig(store, gdir)
    rebuilt.carry_over(gateway)
    (gdir / "ania.toml").write_text("[bot\n")
    assert rebuilt.publish_edits() == []
    assert rebuilt.pull(local_wins=True) == [] and (gdir / "ania.toml").read_text() == "[bot\n"
