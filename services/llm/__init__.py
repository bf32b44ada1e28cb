"""The chat model (services/llm/factory.py) and the lean client it uses (services/llm/lean_openai.py,
the project's only override of a private library method, pinned and tested), and the vision describer
(services/llm/vision.py) that puts images into words for a model without vision; the process-wide
limit on model calls in flight (services/llm/limiter.py)."""

from services.llm.factory import ModelFactory
from services.llm.lean_openai import LeanChatOpenAI
from services.llm.limiter import CallLimiter
from services.llm.vision import VisionDescriber

__all__ = ["CallLimiter", "LeanChatOpenAI", "ModelFactory", "VisionDescriber"]
