"""The chat model client: the real `ChatOpenAI` against any OpenAI-compatible endpoint (DeepSeek, OpenAI,
vLLM, Ollama). Settings are read when the first run needs a model, not at import."""

from __future__ import annotations

from langchain_openai import ChatOpenAI

from services.config import Settings, require_llm


class ModelFactory:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._model: ChatOpenAI | None = None

    def model(self) -> ChatOpenAI:
        if self._model is None:
            require_llm(self._settings)
            llm = self._settings.llm
            self._model = ChatOpenAI(
                base_url=llm.base_url,
                api_key=llm.api_key or "none",
                model=llm.model,
                timeout=llm.timeout_sec,
                max_retries=llm.max_retries,
                temperature=llm.temperature,
                stream_usage=True,
            )
        return self._model
