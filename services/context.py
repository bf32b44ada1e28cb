"""The run context: live objects a run needs, passed with LangGraph's `context=` and never checkpointed.

One frozen dataclass: nodes and tools get the session, the requester, the callback bridge,
the session's tool executor and the services through it; there are no module globals. It lives with the
services (layer 1) because it carries them; the tool abstraction below takes it untyped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal, Protocol

from core.errors import ToolError
from core.registry import SessionExecutor
from services.container import Services
from services.usage import MessageLimits, UsageMeter

#: Who runs: the session's own agent, a subagent, a clock task's one-shot agent, or a team member.
AgentKind = Literal["main", "subagent", "clock", "team_member"]


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
    #: Queue images (base64) for the model's next request, e.g. from an MCP result.
    def queue_images(self, images: list[str]) -> None: ...
    #: Show an approval prompt in this chat (in a group: quoting the message and @-mentioning the requester);
    #: the answer is taken at message entry. False when it could not be shown.
    async def request_approval(self, prompt: str) -> bool: ...


@dataclass(frozen=True)
class RunContext:
    #: The conversation: `g:<group>` or `f:<user>` (a subagent or clock run acts on its target's).
    session_key: str
    #: The user whose message started the run; "" when nobody did (clock, subagent: only admins approve).
    requester: str
    #: How tools reach the chat (T7).
    bridge: CallbackBridge
    #: The tools this run sees; the session's own executor, or a throwaway one.
    executor: SessionExecutor
    #: Everything stateful, built once by the composition root (ania/compose.py).
    services: Services
    agent_kind: AgentKind = "main"
    #: `time.monotonic()` when the run's time budget ends; None = no budget.
    deadline: float | None = None
    #: Tokens a tool call spent outside the loop (subagents, team members); set per call by the execute step.
    usage: UsageMeter | None = None
    #: The admin who allowed this call (set per call by the admin-approval gate; "" otherwise).
    approved_by: str = ""
    #: Who wrote the instructions of a run nobody requested (a clock task's creator): like a requester, they
    #: cannot approve the run's configuration changes (G3), so a task is no way round the second admin.
    author: str = ""
    #: What the message may still do (its subagent and team calls, its spend against the quota); a subagent,
    #: team member or background subagent carries its parent's. None: no caps, no quota (a bare tool call).
    limits: MessageLimits | None = None
    #: The id of the tool call being executed (set per call by the execute step; the caps decide by it).
    call_id: str = ""

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def is_admin(self, user_id: str | None = None) -> bool:
        return self.services.admins.is_admin(self.requester if user_id is None else user_id)

    def admin_in_group(self, action: str) -> None:
        """In a group, what belongs to the whole chat (its knowledge base, memories, teams) is removed or
        replaced by an admin only: one member (or an injection in one member's message) must not wipe what
        the others built. In a private chat the person is the chat."""
        if self.session_key.startswith("g:") and not self.is_admin():
            raise ToolError(f"in a group only an admin can {action}: it belongs to everyone in the chat; "
                            "ask an admin")

    @property
    def owns_executor(self) -> bool:
        """Whether tools loaded now stay with the session (its own executor) or vanish with the run."""
        return self.executor.owner == self.session_key
