"""The chat model (services/llm/factory.py) and the lean client it uses (services/llm/lean_openai.py,
the project's only override of a private library method, pinned and tested)."""

from services.llm.factory import ModelFactory
from services.llm.lean_openai import LeanChatOpenAI

__all__ = ["LeanChatOpenAI", "ModelFactory"]
