"""A hostile peer or group member against the OneBot platform (issue 22): a frame that used to end the
link, a listener without an access token, quotes of messages from other chats, and a huge message."""

from __future__ import annotations

import logging

import pytest

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
