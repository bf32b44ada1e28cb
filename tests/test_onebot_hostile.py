"""A hostile peer or group member against the OneBot platform (issue 22): a frame that used to end the
link, a listener without an access token, quotes of messages from other chats, and a huge message."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys

import pytest

from tests.onebot_fake import FakeOneBot
from tests.onebot_helpers import BOT
from tests.test_serve import ROOT, env_for
from tests.test_terminal import ania
from tests.test_terminal import env_for as terminal_env

#: A valid JSON text that no recursive decoder reads: it raised RecursionError out of the frame handler.
NESTED = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize("mode", ["forward", "reverse"])
async def test_a_deeply_nested_frame_is_dropped_and_the_link_lives_on(bot, caplog, mode):
    b = await bot(mode=mode)
    with caplog.at_level(logging.WARNING):
        await b.fake.push_raw(NESTED)
        await b.fake.private_message(42, "still there?")
        await b.fake.wait_for(lambda: b.fake.sent)
    assert b.fake.texts() == ["echo: still there?"]
    assert b.fake.connections == 1, "the link was not dropped"
    assert any("could not be handled (RecursionError, dropped)" in r.getMessage() for r in caplog.records)
    assert not any(r.exc_info for r in caplog.records), "no traceback"


def test_a_listener_other_machines_reach_is_refused_without_an_access_token(scripted_llm, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = env_for(scripted_llm, tmp_path, ANIA_ONEBOT__LISTEN=f"0.0.0.0:{port}")
    done = subprocess.run([sys.executable, "-m", "ania.cli", "serve"], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=30)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"ania: onebot.listen '0.0.0.0:{port}' is reachable from other machines and "
                                  "onebot.access_token is empty: set onebot.access_token")


async def test_a_loopback_listener_without_an_access_token_warns_once(bot, caplog):
    with caplog.at_level(logging.WARNING):
        await bot(mode="reverse", fake=FakeOneBot(self_id=BOT, token="s3cret"), onebot={"access_token": "s3cret"})
        assert not any("access_token" in r.getMessage() for r in caplog.records)
        b = await bot(mode="reverse")
    warned = [r for r in caplog.records if "onebot.access_token" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert "127.0.0.1:0 has no onebot.access_token: any program on this machine can connect" in warned[0].getMessage()
    await b.fake.private_message(42, "hi from this machine")
    await b.fake.wait_for(lambda: b.fake.sent)


async def test_a_10_mb_message_reaches_the_model_cut_with_a_marker(bot, scripted_llm):
    b = await bot()
    await b.fake.private_message(42, "x" * 10_000_000)
    await b.fake.wait_for(lambda: b.fake.sent, timeout=60)
    [request] = scripted_llm.requests
    assert len(request.raw) < 60_000, "the model request stays bounded"
    assert b.user_texts() == ["x" * 20_000 + "\n[message cut: 20000 of 10000000 characters]"]


def test_a_10_mb_line_and_a_custom_command_at_the_terminal_are_cut(scripted_llm, tmp_path):
    env = terminal_env(scripted_llm, tmp_path, ANIA_BOT__MAX_INPUT_RUNES="30000")
    (tmp_path / "config" / "commands.json").write_text('{"commands": {"thrice": "$args / $args / $args"}}')
    done = ania("chat", env=env, stdin="y" * 10_000_000 + "\n/thrice " + "z" * 15_000 + "\n")
    assert done.returncode == 0, done.stderr
    first, second = scripted_llm.requests
    assert len(first.raw) < 80_000 and len(second.raw) < 160_000, "the model requests stay bounded"
    said = [next(m["content"] for m in reversed(r.messages) if m["role"] == "user") for r in (first, second)]
    assert said[0] == "y" * 30_000 + "\n[message cut: 30000 of 10000000 characters]"
    assert said[1] == ("z" * 15_000 + " / " + "z" * 14_997 + "\n[message cut: 30000 of 45006 characters]")
