"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (a fake that speaks the real protocol).

Tests, the benchmark and a newcomer's first `ania chat` drive the real `ChatOpenAI` against it. Each
request takes the next scripted step; with the script empty it asks the responder (`respond_with`: it
answers by request content, as concurrent subagents ask in no fixed order), else echoes the last user
message. Every request body is kept (raw bytes and parsed JSON) so tests can assert exactly what the
engine sent.
`in_flight` and `peak_in_flight` count the chat requests being answered at once (tests of the engine's
limit on concurrent model calls); a step's `delay` keeps its request in flight that long.
`/v1/embeddings` answers deterministic vectors (`fake_embedding`), or a scripted failure.

This module is the HTTP server and its scripting state. The step types and `load_script` (script files)
live in `ania.fakes.script`, the wire format of the answers in `ania.fakes.wire`; both are re-exported
here, so `from ania.fakes.openai_server import Reply, ScriptedOpenAI, ...` keeps working.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ania.fakes.faults import Raw
from ania.fakes.script import STEP_KEYS, Calls, Dims, EmbedStep, Fail, Reply, Stall, Step, echo, load_script
from ania.fakes.wire import (
    EscapingJSONResponse,
    assistant_message,
    completion,
    error,
    fake_embedding,
    stream_chunks,
    usage_of,
)

__all__ = [
    "STEP_KEYS", "Calls", "Dims", "EmbedStep", "Fail", "Recorded", "Reply", "ScriptedOpenAI", "Stall", "Step",
    "fake_embedding", "load_script",
]


@dataclass
class Recorded:
    raw: bytes
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)
    #: The usage this request was answered with (empty until it is answered).
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages

    @property
    def tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = self.body.get("tools", [])
        return tools

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]


class _PromptServer(uvicorn.Server):
    """uvicorn's server, whose main loop waits for `stop` instead of checking `should_exit` every 0.1 s: a test
    suite stops one of these per test (its date header is set once, at the start)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._woken = asyncio.Event()  # bound to the server's loop at its first wait

    def wake(self) -> None:
        """In the server's loop (call_soon_threadsafe): look at `should_exit` now."""
        self._woken.set()

    async def main_loop(self) -> None:
        await self.on_tick(0)
        while not self.should_exit:
            await self._woken.wait()
            self._woken.clear()


class ScriptedOpenAI:
    """Start with `start()` (or as a context manager); `base_url` is what `llm.base_url` takes."""

    def __init__(self, model: str = "scripted-model") -> None:
        self.model = model
        self.requests: list[Recorded] = []
        self.model_seconds = 0.0  # time spent in scripted delays (the "model's time")
        self.in_flight = 0  # chat requests being answered now, and the most at once
        self.peak_in_flight = 0
        self._script: list[Step] = []
        self._responder: Callable[[dict[str, Any]], Step] | None = None
        self._lock = threading.Lock()
        self._seq = 0
        self.embed_dim = 64
        self.embedding_inputs: list[list[str]] = []  # the `input` of every /v1/embeddings request
        self._embed_script: list[EmbedStep] = []
        self._server: _PromptServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # --- scripting ---------------------------------------------------------------------------
    def script(self, steps: list[Step]) -> ScriptedOpenAI:
        with self._lock:
            self._script.extend(steps)
        return self

    def respond_with(self, responder: Callable[[dict[str, Any]], Step] | None) -> ScriptedOpenAI:
        """Answer requests by content once the script is empty (None: echo again)."""
        self._responder = responder
        return self

    def script_embeddings(self, steps: list[EmbedStep]) -> ScriptedOpenAI:
        """The next /v1/embeddings requests fail, stall or answer a wrong size; then deterministic vectors."""
        with self._lock:
            self._embed_script.extend(steps)
        return self

    def pending(self) -> int:
        return len(self._script)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._responder = None
            self.requests.clear()
            self.model_seconds = 0.0
            self.peak_in_flight = self.in_flight

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> ScriptedOpenAI:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted sockets inherit it: no 40 ms delayed-ACK stall on every keep-alive response.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        app = Starlette(routes=[
            Route("/v1/chat/completions", self._handle, methods=["POST"]),
            Route("/chat/completions", self._handle, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/v1/embeddings", self._embeddings, methods=["POST"]),
            Route("/embeddings", self._embeddings, methods=["POST"]),
        ])
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = _PromptServer(config)
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._stopping = asyncio.Event()
            loop.call_soon(ready.set)
            assert self._server is not None  # noqa: S101 - narrows for mypy: start() set it just above
            loop.run_until_complete(self._server.serve(sockets=[sock]))
            loop.close()

        self._thread = threading.Thread(target=run, name="scripted-openai", daemon=True)
        self._thread.start()
        ready.wait(5)
        deadline = time.monotonic() + 5
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Ends scripted delays and stalls at once, so no request is cut off (and logged) at shutdown."""
        loop, stopping = getattr(self, "_loop", None), getattr(self, "_stopping", None)
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)
        if self._server is not None:
            self._server.should_exit = True
            if loop is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._server.wake)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> ScriptedOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- protocol ----------------------------------------------------------------------------
    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _embeddings(self, request: Request) -> Response:
        body = json.loads(await request.body())
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else list(texts)
        with self._lock:
            self.embedding_inputs.append(texts)
            step = self._embed_script.pop(0) if self._embed_script else None
        while isinstance(step, Stall):
            await asyncio.sleep(step.seconds)
            step = step.then if isinstance(step.then, (Fail, Stall, Dims)) else None
        if isinstance(step, Fail):
            return error(step.message, step.status)
        dim = step.n if isinstance(step, Dims) else self.embed_dim
        data = [{"object": "embedding", "index": i, "embedding": fake_embedding(t, dim)} for i, t in enumerate(texts)]
        return JSONResponse({"object": "list", "data": data, "model": body.get("model", ""),
                             "usage": {"prompt_tokens": sum(len(t) for t in texts), "total_tokens": 0}})

    def _next(self, body: dict[str, Any]) -> Step:
        with self._lock:
            step = self._script.pop(0) if self._script else None
        if step is None:
            step = self._responder(body) if self._responder is not None else Reply(echo(body))
        while callable(step) and not isinstance(step, (Reply, Calls, Fail, Stall, Raw)):
            step = step(body)
        return step

    async def _handle(self, request: Request) -> Response:
        self.in_flight += 1  # one event loop answers every request: no lock needed
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw)
        recorded = Recorded(raw, body)
        with self._lock:
            self.requests.append(recorded)
        step = self._next(body)
        while isinstance(step, Stall):
            if await self._sleep(step.seconds):
                return error("stopping", 503)
            step = step.then or Reply(echo(body))
        if isinstance(step, Fail):
            return error(step.message, step.status)
        if isinstance(step, Raw):
            return Response(step.body, step.status, step.headers, media_type=step.media_type)
        assert isinstance(step, (Reply, Calls)), step  # noqa: S101 - test fake: _next resolves callables
        if step.delay:
            self.model_seconds += step.delay
            if await self._sleep(step.delay):
                return error("stopping", 503)
        message = assistant_message(step, self._next_seq)
        usage = recorded.usage = usage_of(raw, message)
        if body.get("stream"):
            return StreamingResponse(stream_chunks(self.model, message, usage, body), media_type="text/event-stream")
        return EscapingJSONResponse(completion(self._next_seq(), self.model, message, usage))

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    async def _sleep(self, seconds: float) -> bool:
        """Sleep; True when the server is stopping meanwhile."""
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except TimeoutError:
            return False
        return True
