"""A bot (re)started while its data directory refuses writes (found by the 30-minute soak: a supervisor's
restart fell into a 3-second refusal, and the start died with a traceback). It tries again for a while and
comes up; when the refusal lasts, the start fails with one line naming the directory."""

from __future__ import annotations

import dataclasses
import subprocess
import threading
from pathlib import Path

import pytest

import ania.engine as engine_module
from ania.engine import Engine
from ania.fakes.openai_server import Reply
from ania.platforms.bridge import ChatBridge
from core.errors import RunError
from tests.conftest import make_settings


def immutable(data: Path, on: bool) -> bool:
    """`chattr +i` on the data directory and its files (it stops root too); False where it cannot be set."""
    names = [str(data), *(str(p) for p in data.iterdir() if p.is_file() and not p.name.endswith("-shm"))]
    done = subprocess.run(["chattr", "+i" if on else "-i", *names], capture_output=True, check=False)
    return done.returncode == 0


async def used_data_dir(scripted_llm, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    engine = await Engine.start(tmp_path / "config", data, settings=make_settings(scripted_llm))
    await engine.close()
    return data


async def test_a_start_into_a_brief_refusal_comes_up(scripted_llm, tmp_path: Path, monkeypatch, caplog) -> None:
    data = await used_data_dir(scripted_llm, tmp_path)
    (data / "ania.db.migrate.lock").unlink(missing_ok=True)  # the soak's case: the lock file made anew
    if not immutable(data, True):
        pytest.skip("chattr +i is not available here")
    released = threading.Timer(1.5, immutable, (data, False))
    released.start()
    try:
        engine = await Engine.start(tmp_path / "config", data, settings=make_settings(scripted_llm))
    finally:
        released.join()
        immutable(data, False)
    try:
        assert "refuses writes" in caplog.text and str(data) in caplog.text
        scripted_llm.script([Reply("hello")])
        sent: list[str] = []

        async def send(text: str) -> None:
            sent.append(text)

        result = await engine.run_turn("g:1", "u1", "hi", ChatBridge(send, tmp_path / "outbox"))
        assert (result.status, sent) == ("ok", ["hello"])
    finally:
        await engine.close()


async def test_a_lasting_refusal_fails_the_start_with_one_line(scripted_llm, tmp_path: Path, monkeypatch) -> None:
    data = await used_data_dir(scripted_llm, tmp_path)
    (data / "ania.db.migrate.lock").unlink(missing_ok=True)
    waits: list[float] = []

    async def no_wait(sec: float) -> None:
        waits.append(sec)

    monkeypatch.setattr(engine_module, "STORE_OPEN", dataclasses.replace(engine_module.STORE_OPEN, sleep=no_wait))
    if not immutable(data, True):
        pytest.skip("chattr +i is not available here")
    try:
        with pytest.raises(RunError) as e:
            await Engine.start(tmp_path / "config", data, settings=make_settings(scripted_llm))
    finally:
        immutable(data, False)
    assert f"could not open the data directory {data}" in str(e.value) and "\n" not in str(e.value)
    assert waits == [1.0, 2.0, 4.0, 8.0]
