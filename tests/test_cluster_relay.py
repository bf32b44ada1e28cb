"""The gateway's relay (ania/cluster/relay.py): whoever holds it speaks for the bot, so only a worker with the
token gets in, a relay reachable from other machines needs one, and a frame that is not an API call costs
nothing. A worker's calls reach the implementation with their answers, and what it sends is known to the
gateway as the bot's own message (a member's reply to it is a reply to the bot)."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from ania.cluster.relay import Relay, relay_address
from ania.platforms.onebot.connection import Connection, dial_forever
from ania.platforms.onebot.outbound import Outbound
from core.errors import ConfigError
from core.settings import OneBotSettings
from core.settings.cluster import ClusterSettings
from tests.cluster_helpers import free_port
from tests.onebot_fake import FakeOneBot


async def nothing(event: dict) -> None:
    pass


@pytest.fixture
async def relay():
    fake = await FakeOneBot(self_id=10000).serve()
    upstream = Connection(nothing, 5.0)
    dialer = asyncio.create_task(dial_forever(upstream, fake.url, "", 1.0))
    out = Outbound(upstream, OneBotSettings)
    relay = Relay(upstream, out)
    await relay.start(ClusterSettings(relay_listen=f"127.0.0.1:{free_port()}", relay_token="s3cret"))
    await upstream.wait_connected(10)
    yield relay, fake, out
    await relay.stop()
    dialer.cancel()
    await asyncio.gather(dialer, return_exceptions=True)
    await fake.close()


async def call(ws, action: str, params: dict, echo: str = "e1") -> dict:
    await ws.send(json.dumps({"action": action, "params": params, "echo": echo}))
    return json.loads(await asyncio.wait_for(ws.recv(), 10))


async def test_a_worker_without_the_token_is_refused(relay) -> None:
    r, _, _ = relay
    url = f"ws://127.0.0.1:{r.port}/relay"
    for headers, status in (({}, 401), ({"Authorization": "Bearer wrong"}, 403)):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, additional_headers=headers, proxy=None):
                pass
        assert refused.value.response.status_code == status


async def test_calls_are_relayed_and_the_bots_own_messages_are_noted(relay) -> None:
    r, fake, out = relay
    async with connect(f"ws://127.0.0.1:{r.port}/relay", additional_headers={"Authorization": "Bearer s3cret"},
                       proxy=None) as ws:
        await ws.send("not json at all")  # dropped, the link stays
        await ws.send(json.dumps({"no": "action"}))
        answer = await call(ws, "send_group_msg", {"group_id": 5, "message": [{"type": "text", "data": {"text": "hi"}}]})
        assert answer["status"] == "ok" and answer["echo"] == "e1"
        mid = str(answer["data"]["message_id"])
        assert fake.texts("g:5") == ["hi"] and out.own_chat(mid) == "g:5"
        fake.fail["get_msg"] = 1
        failed = await call(ws, "get_msg", {"message_id": 1}, echo="e2")
        assert failed["status"] == "failed" and failed["echo"] == "e2" and "get_msg" in failed["wording"]


def test_a_relay_other_machines_reach_needs_a_token() -> None:
    with pytest.raises(ConfigError, match=r"cluster\.relay_token"):
        relay_address(ClusterSettings(relay_listen="0.0.0.0:8091"))
    assert relay_address(ClusterSettings(relay_listen="0.0.0.0:8091", relay_token="t")) == ("0.0.0.0", 8091)  # noqa: S104
    with pytest.raises(ConfigError, match="host:port"):
        relay_address(ClusterSettings(relay_listen="nonsense"))
