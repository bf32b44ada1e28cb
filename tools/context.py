"""The run context: live objects a run needs, passed with LangGraph's `context=` and never checkpointed.

One frozen dataclass (STYLE 3): nodes and tools get the session, the requester, the callback bridge,
the session's tool executor and the services through it; there are no module globals.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from services.container import Services
    from tools.executor import SessionExecutor


class CallbackBridge(Protocol):
    """How tools reach the chat platform (T7). Tools never touch the platform directly."""

    async def send_text(self, text: str) -> str: ...
    async def send_image(self, b64: str) -> str: ...
    async def send_file(self, name: str, b64: str) -> str: ...
    async def get_msg_history(self, count: int, before_seq: int = 0) -> str: ...
    async def get_private_file_url(self, file_id: str) -> str: ...
    async def load_images(self) -> str: ...
    def take_loaded_images(self) -> list[str]: ...
    async def load_local_image(self, path: str) -> str: ...


@dataclass(frozen=True)
class RunContext:
    session_key: str
    requester: str
    bridge: CallbackBridge
    executor: "SessionExecutor"
    services: "Services"
    agent_kind: str = "main"  # main | subagent | clock | team_member
    deadline: float | None = None  # time.monotonic() value; None = no budget

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def is_admin(self, user_id: str | None = None) -> bool:
        return self.services.settings.is_admin(self.requester if user_id is None else user_id)
