"""The one override of a private library method in Ania, isolated here: `ChatOpenAI._get_request_payload`.

No public API lets a caller skip the OpenAI SDK's per-request type transform. The override is checked
against the langchain-openai versions in services/versions.py (pyproject.toml pins the same range; the
fast mode refuses to start outside it), and tests/test_lean_client.py fails loudly when the library
changes: the method must exist with this signature and the request bytes must equal the stock client's.
`engine.stock = true` uses the plain `ChatOpenAI` instead (services/llm/factory.py).
"""

from __future__ import annotations

from typing import Any

from langchain_openai import ChatOpenAI

#: Request keys sent as they are, past the OpenAI SDK's per-request type transform.
RAW_KEYS = ("messages", "tools")


class LeanChatOpenAI(ChatOpenAI):
    """`ChatOpenAI` whose messages and tools skip the OpenAI SDK's request transform.

    The SDK walks every request against its TypedDict definitions (about 0.2 ms of CPU per message,
    20 ms a request at 100 messages) although LangChain already built plain JSON dicts. Sending them
    through `extra_body`, the SDK's documented pass-through, puts the same bytes on the wire.
    """

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        extra = dict(payload.get("extra_body") or {})
        for key in RAW_KEYS:
            if key in payload:
                extra[key] = payload.pop(key)
        payload["messages"] = []  # required by the SDK's signature; replaced by extra_body's
        payload["extra_body"] = extra
        return payload
