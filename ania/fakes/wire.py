"""What the scripted model sends back, in the OpenAI wire format: assistant messages, streamed chunks,
token usage, error bodies and deterministic embedding vectors.

Split from `openai_server.py` so the server module holds only the HTTP plumbing and the scripting state;
these are pure functions of a step or a request, with no server state.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import JSONResponse

from ania.fakes.script import Calls, Reply


def assistant_message(step: Reply | Calls, next_seq: Callable[[], int]) -> dict[str, Any]:
    """The assistant message a step answers; `next_seq()` numbers each tool call's id."""
    if isinstance(step, Reply):
        return {"role": "assistant", "content": step.text}
    calls = []
    for name, args in step.calls:
        calls.append({"id": f"call_{next_seq()}", "type": "function",
                      "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}})
    return {"role": "assistant", "content": step.text or None, "tool_calls": calls}


def completion(seq: int, model: str, message: dict[str, Any], usage: dict[str, int]) -> dict[str, Any]:
    """A non-streamed chat.completion body."""
    return {
        "id": f"chatcmpl-{seq}", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
        "usage": usage,
    }


async def stream_chunks(model: str, message: dict[str, Any], usage: dict[str, int],
                        body: dict[str, Any]) -> AsyncIterator[str]:
    """The server-sent events of a streamed answer: one delta, the finish, the usage if asked, [DONE]."""
    base = {"id": "chatcmpl-stream", "object": "chat.completion.chunk", "created": 0, "model": model}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
    yield f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': delta, 'finish_reason': None}]})}\n\n"
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    yield f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': {}, 'finish_reason': finish}]})}\n\n"
    if (body.get("stream_options") or {}).get("include_usage"):
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


def usage_of(raw: bytes, message: dict[str, Any]) -> dict[str, int]:
    """Token usage, roughly four bytes a token of the request and of the answer."""
    prompt = max(1, len(raw) // 4)
    completion = max(1, len(json.dumps(message)) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def error(message: str, status: int) -> JSONResponse:
    """An OpenAI-style error response."""
    return JSONResponse({"error": {"message": message, "type": "server_error"}}, status_code=status)


class EscapingJSONResponse(JSONResponse):
    """A lone surrogate in a scripted answer goes out as its JSON escape, as a real provider's would."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, separators=(",", ":")).encode("ascii")


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
