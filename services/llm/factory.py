"""The chat model the nodes call: the real `ChatOpenAI` (lean variant) against any OpenAI-compatible endpoint
(DeepSeek, OpenAI, vLLM, Ollama). Settings are read when the first run needs a model, not at import.
`engine.stock = true` builds the plain `ChatOpenAI` (the same request bytes, without the private override)."""

from __future__ import annotations

import httpx
from langchain_openai import ChatOpenAI

from core.settings import Settings, require_llm
from services.llm.http import model_http_client
from services.llm.lean_openai import LeanChatOpenAI


class ModelFactory:
    """Builds the chat model on first use. It owns its HTTP client (closed with `aclose`): langchain-openai's
    default client is cached per process and bound to the event loop that first used it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._model: ChatOpenAI | None = None
        self._http: httpx.AsyncClient | None = None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def model(self) -> ChatOpenAI:
        if self._model is None:
            require_llm(self._settings)
            llm = self._settings.llm
            client = ChatOpenAI if self._settings.engine.stock else LeanChatOpenAI
            self._model = client(
                base_url=llm.base_url,
                api_key=llm.api_key or "none",
                model=llm.model,
                timeout=llm.timeout_sec,
                max_retries=llm.max_retries,
                temperature=llm.temperature,
                stream_usage=True,
                http_async_client=self._client(),
            )
        return self._model

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = model_http_client(self._settings.llm.timeout_sec)
        return self._http
