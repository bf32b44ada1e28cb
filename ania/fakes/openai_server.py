"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (a fake that speaks the real protocol).

Tests, the benchmark and a newcomer's first `ania chat` drive the real `ChatOpenAI` against it. Each
request takes the next scripted step; with the script empty it asks the responder (`respond_with`: it
answers by request content, as concurrent subagents ask in no fixed order), else echoes the last user
message. Every
request body is kept (raw bytes and parsed JSON) so tests can assert exactly what the engine sent.

`load_script` reads a script from a JSON file (`ania fake-llm --script FILE`, `ania demo --script FILE`):
a list of steps, each `{"reply": "text"}`, `{"calls": [{"name": "time", "args": {...}}], "text": ""}`,
`{"fail": 500}` or `{"stall": seconds}`, with an optional `"delay"` and a `"note"` that is ignored. In a
reply, `{user}` is the last user message and `{tool_result}` the last tool result, so a script can show
what a tool returned.
`in_flight` and `peak_in_flight` count the chat requests being answered at once (tests of the engine's
limit on concurrent model calls); a step's `delay` keeps its request in flight that long.
`/v1/embeddings` answers deterministic vectors (`fake_embedding`), or a scripted failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from services.errors import ConfigError


@dataclass
class Reply:
    """A plain assistant answer."""

    text: str
    delay: float = 0.0


@dataclass
class Calls:
    """An assistant turn that calls tools: `(name, args)`; args as a dict, or a raw string (bad JSON)."""

    calls: list[tuple[str, dict | str]]
    text: str = ""
    delay: float = 0.0


@dataclass
class Fail:
    """An HTTP error from the endpoint."""

    status: int = 500
    message: str = "scripted failure"


@dataclass
class Stall:
    """Answer only after `seconds` (to trip the client's timeout)."""

    seconds: float
    then: Step | None = None


Step = Reply | Calls | Fail | Stall | Callable[[dict], "Step"]


@dataclass
class Dims:
    """An embeddings answer with vectors of `n` numbers (a wrong size, for tests)."""

    n: int


EmbedStep = Fail | Stall | Dims


@dataclass
class Recorded:
    raw: bytes
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)
    #: The usage this request was answered with (empty until it is answered).
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.body.get("tools", [])

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]


class ScriptedOpenAI:
    """Start with `start()` (or as a context manager); `base_url` is what `llm.base_url` takes."""

    def __init__(self, model: str = "scripted-model") -> None:
        self.model = model
        self.requests: list[Recorded] = []
        self.model_seconds = 0.0  # time spent in scripted delays (the "model's time")
        self.in_flight = 0  # chat requests being answered now, and the most at once
        self.peak_in_flight = 0
        self._script: list[Step] = []
        self._responder: Callable[[dict], Step] | None = None
        self._lock = threading.Lock()
        self._seq = 0
        self.embed_dim = 64
        self.embedding_inputs: list[list[str]] = []  # the `input` of every /v1/embeddings request
        self._embed_script: list[EmbedStep] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # --- scripting ---------------------------------------------------------------------------
    def script(self, steps: list[Step]) -> ScriptedOpenAI:
        with self._lock:
            self._script.extend(steps)
        return self

    def respond_with(self, responder: Callable[[dict], Step] | None) -> ScriptedOpenAI:
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
        self._server = uvicorn.Server(config)
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._stopping = asyncio.Event()
            loop.call_soon(ready.set)
            assert self._server is not None
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
            return JSONResponse({"error": {"message": step.message, "type": "server_error"}}, status_code=step.status)
        dim = step.n if isinstance(step, Dims) else self.embed_dim
        data = [{"object": "embedding", "index": i, "embedding": fake_embedding(t, dim)} for i, t in enumerate(texts)]
        return JSONResponse({"object": "list", "data": data, "model": body.get("model", ""),
                             "usage": {"prompt_tokens": sum(len(t) for t in texts), "total_tokens": 0}})

    def _next(self, body: dict[str, Any]) -> Step:
        with self._lock:
            step = self._script.pop(0) if self._script else None
        if step is None:
            step = self._responder(body) if self._responder is not None else Reply(_echo(body))
        while callable(step) and not isinstance(step, (Reply, Calls, Fail, Stall)):
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
                return JSONResponse({"error": {"message": "stopping", "type": "server_error"}}, status_code=503)
            step = step.then or Reply(_echo(body))
        if isinstance(step, Fail):
            return JSONResponse({"error": {"message": step.message, "type": "server_error"}}, status_code=step.status)
        assert isinstance(step, (Reply, Calls)), step  # _next resolves callables
        if step.delay:
            self.model_seconds += step.delay
            if await self._sleep(step.delay):
                return JSONResponse({"error": {"message": "stopping", "type": "server_error"}}, status_code=503)
        message = self._message(step)
        usage = recorded.usage = _usage(raw, message)
        if body.get("stream"):
            return StreamingResponse(self._stream(message, usage, body), media_type="text/event-stream")
        self._seq += 1
        return _Escaping({
            "id": f"chatcmpl-{self._seq}", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": usage,
        })

    async def _sleep(self, seconds: float) -> bool:
        """Sleep; True when the server is stopping meanwhile."""
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except TimeoutError:
            return False
        return True

    def _message(self, step: Reply | Calls) -> dict[str, Any]:
        if isinstance(step, Reply):
            return {"role": "assistant", "content": step.text}
        calls = []
        for name, args in step.calls:
            self._seq += 1
            calls.append({"id": f"call_{self._seq}", "type": "function",
                          "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}})
        return {"role": "assistant", "content": step.text or None, "tool_calls": calls}

    async def _stream(self, message: dict[str, Any], usage: dict[str, int], body: dict[str, Any]):
        base = {"id": "chatcmpl-stream", "object": "chat.completion.chunk", "created": 0, "model": self.model}
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
        yield f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': delta, 'finish_reason': None}]})}\n\n"
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        yield f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': {}, 'finish_reason': finish}]})}\n\n"
        if (body.get("stream_options") or {}).get("include_usage"):
            yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
        yield "data: [DONE]\n\n"


def fake_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic unit vector: hashed words and character pairs, so texts that share words point
    the same way. It tests the plumbing, not semantics (no synonyms, no paraphrases)."""
    vec = [0.0] * dim
    folded = text.casefold()
    features = re.findall(r"[a-z0-9]+", folded)
    cjk = "".join(re.findall(r"[\u4e00-\u9fff]", folded))
    features += [cjk[i : i + 2] for i in range(len(cjk) - 1)] or list(cjk)
    for f in features:
        h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "big")
        vec[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec] if any(vec) else [1.0] + [0.0] * (dim - 1)


def _last(body: dict[str, Any], role: str) -> str | None:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == role:
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return None


def _echo(body: dict[str, Any]) -> str:
    user = _last(body, "user")
    return "echo: (nothing)" if user is None else f"echo: {user}"


# --- scripts from a file -------------------------------------------------------------------------
STEP_KEYS = ("reply", "calls", "fail", "stall")


def load_script(path: str | Path) -> list[Step]:
    """The steps of a JSON script file; a ConfigError names the file and the step that is wrong."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read script {path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"script {path} is not valid JSON: {e}") from None
    if not isinstance(raw, list):
        raise ConfigError(f"script {path}: expected a JSON list of steps")
    steps = []
    for number, item in enumerate(raw, 1):
        try:
            steps.append(_step(item))
        except (TypeError, ValueError, KeyError) as e:
            raise ConfigError(f"script {path}, step {number}: {e}") from None
    return steps


def _step(item: Any) -> Step:
    if not isinstance(item, dict):
        raise TypeError(f"a step is an object with one of {', '.join(STEP_KEYS)}")
    kinds = [k for k in STEP_KEYS if k in item]
    unknown = sorted(set(item) - {*STEP_KEYS, "text", "delay", "note", "message"})
    if len(kinds) != 1 or unknown:
        raise ValueError(f"give exactly one of {', '.join(STEP_KEYS)}" + (f" (unknown: {', '.join(unknown)})"
                                                                            if unknown else ""))
    delay = float(item.get("delay", 0))
    if "reply" in item:
        text = str(item["reply"])
        return (lambda body: Reply(_fill(text, body), delay)) if "{" in text else Reply(text, delay)
    if "calls" in item:
        calls = item["calls"]
        if not isinstance(calls, list) or not calls:
            raise TypeError('"calls" is a non-empty list of {"name": ..., "args": {...}}')
        pairs: list[tuple[str, dict | str]] = []
        for call in calls:
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                raise TypeError('each call is {"name": "tool", "args": {...}}')
            args = call.get("args", {})
            if not isinstance(args, (dict, str)):
                raise TypeError(f'the args of "{call["name"]}" must be an object (or a raw JSON string)')
            pairs.append((call["name"], args))
        return Calls(pairs, text=str(item.get("text", "")), delay=delay)
    if "fail" in item:
        return Fail(int(item["fail"]), str(item.get("message", "scripted failure")))
    return Stall(float(item["stall"]))


class _Escaping(JSONResponse):
    """A lone surrogate in a scripted answer goes out as its JSON escape, as a real provider's would."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, separators=(",", ":")).encode("ascii")


def _fill(text: str, body: dict[str, Any]) -> str:
    return text.replace("{user}", _last(body, "user") or "").replace("{tool_result}", _last(body, "tool") or "")


def _usage(raw: bytes, message: dict[str, Any]) -> dict[str, int]:
    prompt = max(1, len(raw) // 4)
    completion = max(1, len(json.dumps(message)) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
