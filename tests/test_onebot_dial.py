"""The forward dialer (ania/platforms/onebot/connection.py): websockets' reconnecting iterator with our
delays and log lines. Delays of hundredths of a second keep it quick; nothing here measures time."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from ania.platforms.onebot.adapter import OneBotAdapter
from ania.platforms.onebot.connection import Connection, Redial, dial_forever
from core.errors import ConfigError
from tests.onebot_fake import FakeOneBot
from tests.onebot_helpers import BOT, make_engine


def test_the_waits_double_to_the_cap_and_start_over_after_a_connect():
    redial = Redial("ws://x/", max_delay=8)
    waits = redial.delays()
    assert [next(waits) for _ in range(6)] == [1, 2, 4, 8, 8, 8]
    redial.connected()
    assert next(redial.delays()) == 1  # websockets asks for a new run after a connect
    assert Redial("ws://x/", max_delay=0.5, first=2).max_delay == 2  # never below the first wait


async def nothing(event: dict) -> None:
    pass


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_dials_until_the_implementation_is_up_then_redials_after_a_drop(caplog):
    port = free_port()
    conn = Connection(nothing, 1.0)
    fake = FakeOneBot(self_id=BOT)
    with caplog.at_level(logging.INFO, logger="ania.platforms.onebot"):
        dialer = asyncio.create_task(dial_forever(conn, f"ws://127.0.0.1:{port}/", "", 0.04, first_delay=0.01))
        try:
            await fake.wait_for(lambda: sum("cannot connect" in r.getMessage() for r in caplog.records) >= 4)
            await fake.serve(port)
            await fake.wait_for(lambda: conn.connected)
            await fake.drop()
            await fake.wait_for(lambda: fake.connections == 2 and conn.connected)
        finally:
            dialer.cancel()
            await asyncio.gather(dialer, return_exceptions=True)
            await fake.wait_for(lambda: not fake.connected.is_set())  # the cancel closed the link
            await fake.close()
    lines = [r.getMessage() for r in caplog.records]
    failed = [line for line in lines if "cannot connect" in line]
    assert failed[0].startswith(f"OneBot: cannot connect to ws://127.0.0.1:{port}/ (")
    assert failed[0].endswith("retrying in 0 s")
    assert lines.count(f"OneBot: connected to ws://127.0.0.1:{port}/") == 2
    assert f"OneBot: connection to ws://127.0.0.1:{port}/ closed; reconnecting" in lines


async def test_a_malformed_url_is_a_config_error_at_start(tmp_path, scripted_llm):
    fake = FakeOneBot(self_id=BOT)
    engine = await make_engine(tmp_path, scripted_llm, fake, onebot={"ws_url": "http://127.0.0.1:1/"})
    try:
        with pytest.raises(ConfigError, match=r"onebot\.ws_url: .*isn't a valid URI"):
            await OneBotAdapter(engine).start()
    finally:
        await fake.close()
        await engine.close()
