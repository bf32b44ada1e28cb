"""The chat model (services/llm/factory.py) and the lean client it uses (services/llm/lean_openai.py,
the project's only override of a private library method, pinned and tested), and the vision describer
(services/llm/vision.py) that puts images into words for a model without vision."""

from services.llm.factory import ModelFactory
from services.llm.lean_openai import LeanChatOpenAI
from services.llm.vision import VisionDescriber

__all__ = ["LeanChatOpenAI", "ModelFactory", "VisionDescriber"]
