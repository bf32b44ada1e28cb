"""A fake OneBot v11 implementation, written from the specification (botuniverse/onebot-11) and the
NapCat extensions Ania uses. It is the other end of the protocol, not a mock of Ania's code:

- forward WebSocket: a server (`serve()`, URL `.url`) on 127.0.0.1 that checks the access token like the
  spec's HTTP API (missing: 401, wrong: 403), on one Universal connection (path `/`);
- reverse WebSocket: a Universal client (`dial(url)`) that sends `X-Self-ID`, `X-Client-Role` and
  `Authorization: Bearer`, and redials after a drop (`ws_reverse.reconnect_interval`);
- events: `lifecycle` (connect) on every connection, `heartbeat` meta events when asked, private and
  group `message` events in array or string (CQ code) format with `sender`, `raw_message`, `font`;
- actions, answered `{"status", "retcode", "data", "echo"}`: send_private_msg, send_group_msg, get_msg (with
  NapCat's `user_id`, `group_id`, and `target_id` on a private message the bot sent),
  get_login_info, and NapCat's get_group_msg_history, get_friend_msg_history, upload_group_file,
  upload_private_file, get_private_file_url, get_group_file_url; an unknown action fails with 1404.

Tests script faults: actions that never answer (`hang`), that fail N times (`fail`), a dropped link
(`drop()`), raw frames (`push_raw`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from typing import Any

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.http11 import Request, Response

Segments = list[dict[str, Any]]


def cq_escape(value: str, in_code: bool = False) -> str:
    out = value.replace("&", "&amp;").replace("[", "&#91;").replace("]", "&#93;")
    return out.replace(",", "&#44;") if in_code else out


def as_cq(message: Segments) -> str:
    """The spec's string format of a segment array (message/string.md)."""
    out = []
    for seg in message:
        if seg["type"] == "text":
            out.append(cq_escape(seg["data"]["text"]))
        else:
            args = "".join(f",{k}={cq_escape(str(v), True)}" for k, v in (seg.get("data") or {}).items())
            out.append(f"[CQ:{seg['type']}{args}]")
    return "".join(out)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "data": {"text": t}}


def at(qq: int | str) -> dict[str, Any]:
    return {"type": "at", "data": {"qq": str(qq)}}


def reply(message_id: int | str) -> dict[str, Any]:
    return {"type": "reply", "data": {"id": str(message_id)}}


def image(url: str, file: str = "abc.png") -> dict[str, Any]:
    return {"type": "image", "data": {"file": file, "url": url}}


class FakeOneBot:
    def __init__(self, self_id: int = 10000, token: str = "", message_format: str = "array",
                 heartbeat_ms: int | None = None) -> None:
        self.self_id = self_id
        self.token = token
        self.format = message_format
        self.heartbeat_ms = heartbeat_ms
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.sent: list[dict[str, Any]] = []  # send_*_msg params, in order
        self.sent_at: list[float] = []  # time.monotonic() of each, for the benchmark
        self.sent_to: dict[str, asyncio.Event] = {}  # session key → set on each message sent there
        self.uploads: list[dict[str, Any]] = []
        self.files: dict[str, str] = {}  # file_id → URL
        self.images: dict[str, dict[str, str]] = {}  # an image segment's file → get_image's answer
        self.messages: dict[int, dict[str, Any]] = {}
        self.hang: set[str] = set()
        self.fail: dict[str, int] = {}
        self.refused: list[int] = []  # HTTP statuses of refused connections (forward mode)
        self.connections = 0
        self.ws: Any = None
        self.connected = asyncio.Event()
        self._ids = itertools.count(1001)
        self._server: Any = None
        self._dialer: asyncio.Task[None] | None = None
        self._beat: asyncio.Task[None] | None = None
        self.reverse_errors: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()

    # --- forward mode ------------------------------------------------------------------------------

    async def serve(self, port: int = 0) -> FakeOneBot:
        self._server = await serve(self._session, "127.0.0.1", port, process_request=self._auth)
        return self

    @property
    def serving(self) -> bool:
        """Forward mode: the WebSocket server was started (`serve`)."""
        return self._server is not None

    def stop_serving(self) -> None:
        """Forward mode: accept no new connection (the implementation gone for good); the open one stays."""
        if self._server is not None:
            self._server.close()

    @property
    def url(self) -> str:
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}/"

    def _auth(self, ws: ServerConnection, request: Request) -> Response | None:
        if not self.token:
            return None
        header = request.headers.get("Authorization", "")
        given = header.removeprefix("Bearer ").strip() if header else None
        if given is None:
            self.refused.append(401)
            return ws.respond(401, "Unauthorized\n")
        if given != self.token:
            self.refused.append(403)
            return ws.respond(403, "Forbidden\n")
        return None

    # --- reverse mode ------------------------------------------------------------------------------

    def dial(self, url: str, token: str | None = None, interval: float = 0.2) -> None:
        """Dial Ania's reverse endpoint as a Universal client, redialling every `interval` after a drop."""
        headers = {"X-Self-ID": str(self.self_id), "X-Client-Role": "Universal"}
        token = self.token if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"

        async def loop() -> None:
            while True:
                try:
                    async with connect(url, additional_headers=headers, proxy=None) as ws:
                        await self._session(ws)
                except InvalidStatus as e:
                    self.reverse_errors.append(str(e.response.status_code))
                except (OSError, ConnectionClosed) as e:
                    self.reverse_errors.append(type(e).__name__)
                await asyncio.sleep(interval)

        self._dialer = asyncio.create_task(loop())

    def stop_dialing(self) -> None:
        """Reverse mode: stop the dialler (a test then dials by hand with other credentials or paths)."""
        if self._dialer is not None:
            self._dialer.cancel()

    # --- one connection ----------------------------------------------------------------------------

    async def _session(self, ws: Any) -> None:
        self.ws = ws
        self.connections += 1
        self.connected.set()
        await self._push({"post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect"})
        beat = asyncio.create_task(self._heartbeats(ws)) if self.heartbeat_ms else None
        self._beat = beat
        try:
            async for raw in ws:
                task = asyncio.create_task(self._answer(ws, json.loads(raw)))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except ConnectionClosed:
            pass
        finally:
            if self.ws is ws:
                self.ws = None
                self.connected.clear()
            if beat is not None:  # this connection's beat only: a link closed late must not silence the next one
                beat.cancel()

    async def _heartbeats(self, ws: Any) -> None:
        assert self.heartbeat_ms
        while True:
            await self._push({"post_type": "meta_event", "meta_event_type": "heartbeat",
                              "status": {"online": True, "good": True}, "interval": self.heartbeat_ms}, ws)
            await asyncio.sleep(self.heartbeat_ms / 1000)

    async def _answer(self, ws: Any, frame: dict[str, Any]) -> None:
        action, params, echo = frame.get("action", ""), frame.get("params") or {}, frame.get("echo")
        self.calls.append((action, params))
        if action in self.hang:
            return
        if self.fail.get(action, 0) > 0:
            self.fail[action] -= 1
            reply_frame = {"status": "failed", "retcode": 100, "data": None, "wording": "scripted failure"}
        else:
            try:
                data = self._act(action, params)
                reply_frame = {"status": "ok", "retcode": 0, "data": data}
            except KeyError:
                reply_frame = {"status": "failed", "retcode": 1404, "data": None}
        with contextlib.suppress(ConnectionClosed):
            await ws.send(json.dumps({**reply_frame, "echo": echo}, ensure_ascii=False))

    def _act(self, action: str, p: dict[str, Any]) -> Any:
        if action == "get_login_info":
            return {"user_id": self.self_id, "nickname": "Ania"}
        if action in ("send_group_msg", "send_private_msg"):
            self.sent.append({"action": action, **p})
            self.sent_at.append(time.monotonic())
            key = f"g:{p.get('group_id')}" if action == "send_group_msg" else f"f:{p.get('user_id')}"
            self.sent_to.setdefault(key, asyncio.Event()).set()
            kind = "group" if action == "send_group_msg" else "private"
            mid = self.remember(kind, self.self_id, "Ania", p["message"], p.get("group_id"), p.get("user_id"))
            return {"message_id": mid}
        if action == "get_msg":
            return self.messages[int(p["message_id"])]
        if action in ("get_group_msg_history", "get_friend_msg_history"):
            key, value = ("group_id", p["group_id"]) if action == "get_group_msg_history" else ("peer", p["user_id"])
            found = [m for m in self.messages.values() if str(m.get(key)) == str(value)]
            return {"messages": found[-int(p.get("count", 20)):]}
        if action in ("upload_group_file", "upload_private_file"):
            self.uploads.append({"action": action, **p})
            return {"file_id": f"file-{len(self.uploads)}"}
        if action in ("get_private_file_url", "get_group_file_url"):
            return {"url": self.files[p["file_id"]]}
        if action == "get_image":  # what the implementation downloaded for an image segment's `file`
            return self.images[p["file"]]
        raise KeyError(action)

    def remember(self, kind: str, user_id: int, name: str, message: Any, group_id: Any = None,
                 peer: Any = None) -> int:
        """Keep a message in the history that get_msg and the history actions read; returns its id."""
        mid = next(self._ids)
        segs = message if isinstance(message, list) else [text(str(message))]
        self.messages[mid] = {
            "time": int(time.time()), "message_type": kind, "message_id": mid, "real_id": mid,
            "sender": {"user_id": user_id, "nickname": name}, "message": segs, "raw_message": as_cq(segs),
            "group_id": group_id, "peer": peer if peer is not None else user_id, "user_id": user_id,
        }
        if kind == "private" and user_id == self.self_id:
            self.messages[mid]["target_id"] = peer  # NapCat names the peer of a private message the bot sent
        return mid

    # --- events ------------------------------------------------------------------------------------

    async def _push(self, event: dict[str, Any], ws: Any = None) -> None:
        target = ws or self.ws
        assert target is not None, "no connection"
        frame = {"time": int(time.time()), "self_id": self.self_id, **event}
        try:
            raw = json.dumps(frame, ensure_ascii=False)
            raw.encode()
        except UnicodeEncodeError:  # a lone surrogate: JSON spells it as an escape, as a real peer's frame would
            raw = json.dumps(frame)
        with contextlib.suppress(ConnectionClosed):
            await target.send(raw)

    def _message(self, message: Segments) -> Any:
        return as_cq(message) if self.format == "string" else message

    async def group_message(self, group_id: int, user_id: int, message: Segments | str, *,
                            nickname: str = "", card: str = "") -> int:
        segs = [text(message)] if isinstance(message, str) else message
        mid = self.remember("group", user_id, card or nickname or f"user{user_id}", segs, group_id=group_id)
        await self._push({
            "post_type": "message", "message_type": "group", "sub_type": "normal", "message_id": mid,
            "group_id": group_id, "user_id": user_id, "anonymous": None, "message": self._message(segs),
            "raw_message": as_cq(segs), "font": 0,
            "sender": {"user_id": user_id, "nickname": nickname or f"user{user_id}", "card": card,
                       "sex": "unknown", "age": 0, "area": "", "level": "1", "role": "member", "title": ""},
        })
        return mid

    async def private_message(self, user_id: int, message: Segments | str, *, nickname: str = "") -> int:
        segs = [text(message)] if isinstance(message, str) else message
        mid = self.remember("private", user_id, nickname or f"user{user_id}", segs, peer=user_id)
        await self._push({
            "post_type": "message", "message_type": "private", "sub_type": "friend", "message_id": mid,
            "user_id": user_id, "message": self._message(segs), "raw_message": as_cq(segs), "font": 0,
            "sender": {"user_id": user_id, "nickname": nickname or f"user{user_id}", "sex": "unknown", "age": 0},
        })
        return mid

    def silence(self) -> None:
        """Stop the heartbeats but keep the connection open (a hung implementation)."""
        if self._beat is not None:
            self._beat.cancel()

    async def push_raw(self, raw: str) -> None:
        assert self.ws is not None
        await self.ws.send(raw)

    async def drop(self) -> None:
        """Close the current connection from this side (the implementation restarting)."""
        if self.ws is not None:
            await self.ws.close()

    # --- waiting -----------------------------------------------------------------------------------

    def texts(self, session_key: str | None = None) -> list[str]:
        """The text of every message sent (to one session), reply and at segments left out."""
        out = []
        for s in self.sent:
            key = f"g:{s['group_id']}" if s["action"] == "send_group_msg" else f"f:{s['user_id']}"
            if session_key is None or key == session_key:
                out.append("".join(seg["data"].get("text", "") for seg in s["message"] if seg["type"] == "text"))
        return out

    async def wait_for(self, predicate: Any, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; sent so far: {self.texts()}")
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        if self._dialer is not None:
            self._dialer.cancel()
            await asyncio.gather(self._dialer, return_exceptions=True)
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
