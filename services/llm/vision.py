"""The vision describer: a second, vision-capable model that puts images into words for a main model
without vision (`llm.vision = false`, `vision.base_url` and `vision.model` set).

Its tokens are returned with the text, so the caller counts them in the turn's usage.
"""

from __future__ import annotations

from typing import Any

import httpx
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from core.settings import Settings
from services.images import data_url
from services.llm.http import model_http_client

DESCRIBE_PROMPT = (
    "Describe each of the following images for someone who cannot see them: what it shows, any text in it "
    "(verbatim), people, objects, colours and layout. Number the images. Be factual and complete, but brief."
)


class VisionDescriber:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings.vision
        self._model: ChatOpenAI | None = None
        self._http: httpx.AsyncClient | None = None

    @property
    def configured(self) -> bool:
        return self._settings.configured

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _chat(self) -> ChatOpenAI:
        if self._model is None:
            s = self._settings
            self._http = model_http_client(s.timeout_sec)
            self._model = ChatOpenAI(base_url=s.base_url, api_key=s.api_key or "none", model=s.model,
                                     timeout=s.timeout_sec, max_retries=1, http_async_client=self._http)
        return self._model

    async def describe(self, images: list[str], context: str = "") -> tuple[str, Any]:
        """(the description, the reply message whose usage counts); raises on endpoint errors."""
        parts: list[Any] = [{"type": "text", "text": DESCRIBE_PROMPT + (f"\nContext: {context}" if context else "")}]
        parts += [{"type": "image_url", "image_url": {"url": data_url(b64)}} for b64 in images]
        reply = await self._chat().ainvoke([HumanMessage(content=parts)])
        text = reply.content if isinstance(reply.content, str) else "".join(
            p.get("text", "") if isinstance(p, dict) else str(p) for p in reply.content)
        return text.strip() or "(the vision model gave no description)", reply
