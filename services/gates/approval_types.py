"""The approval protocol that the gates, the chat, Studio and a web panel share, as types.

A gate that needs a person pauses its branch with a LangGraph `interrupt(ApprovalRequest)`; whoever holds
the run resumes it with an `Answer` (the chat's approvals service always resumes with a `Decision`). The
request is stored in the checkpoint as it is, so its keys and values are part of the stored bytes: add
nothing here that the gates do not already write. docs/ARCHITECTURE.md ("The approval protocol")
describes the fields for readers outside the code.

Who may answer is read from `kind` and `requester` (services/gates/approvals.py applies it with the settings):
- `kind` "admin" (a configuration change): an admin other than `requester`;
- `kind` "human": an admin; `requester` too when self-approval is on for that kind of chat; an empty
  `requester` (subagents, clock runs) means admins only.
"""

# No `from __future__ import annotations`: the annotations are evaluated, so `__required_keys__` and
# `__optional_keys__` are right at run time (a panel can build its schema from them).
from typing import Any, Literal, NotRequired, TypedDict, get_args

#: Which gate asks: "admin" (G3, configuration changes) or "human" (G4/G6, approval.tools, a tool's own
#: doubt, a PreToolUse hook's "ask").
ApprovalKind = Literal["admin", "human"]
#: Words that allow or deny, in a chat reply or as a resume value (any case, surrounding blanks ignored).
AllowWord = Literal["allow", "yes", "允许", "同意"]
DenyWord = Literal["deny", "no", "拒绝"]
ALLOW_WORDS: tuple[AllowWord, ...] = get_args(AllowWord)
DENY_WORDS: tuple[DenyWord, ...] = get_args(DenyWord)
#: The decision a chat reply or a timeout gives (synonyms folded into these two).
Verdict = Literal["allow", "deny"]


class ApprovalRequest(TypedDict):
    """The interrupt's value: one tool call waiting for a person (built by nodes/gates.py)."""

    type: Literal["tool_approval"]
    kind: ApprovalKind
    tool: str
    #: The call's arguments with secrets masked (`Tool.shown_args`).
    args: dict[str, Any]
    call_id: str
    #: Why the call needs approval (the gate's reason, a hook's, the tool's).
    reason: str
    #: The session key of the chat the call runs for (`g:<group>`, `f:<user>`, a terminal or Studio thread).
    session: str
    #: Who asked. Subagents and clock runs have nobody ("": admins only), but their configuration changes
    #: name the person behind the run (`RunContext.author`), who then may not approve them.
    requester: str
    #: The text shown to the person, with the call and the reason (asked again after an unknown answer).
    prompt: str


class Decision(TypedDict):
    """What the approvals service resumes with: the verdict, who gave it ("" for a timeout or when nobody
    could be asked) and, for those, why."""

    decision: Verdict
    by: str
    reason: NotRequired[str]


class AnswerDict(TypedDict, total=False):
    """A resume value given as an object (Studio, the HTTP API, a panel): `decision` is one of the allow or
    deny words, `by` who answered (a deny without one reads as "no answer"). A bare word instead is
    recorded as answered by the run's requester (or "api")."""

    decision: str
    by: str
    reason: str


#: Any resume value of an approval interrupt: a bare word ("allow", "deny", ...) or an `AnswerDict`.
#: Anything else is refused and the question is asked again.
Answer = str | AnswerDict | Decision


class ApprovalOp(TypedDict):
    """The operation log's `tool_approval` detail (`ania logs ops --kind tool_approval`). `kind` is "" when a
    pending approval was settled after a stop or a restart and its request could not be read."""

    kind: ApprovalKind | Literal[""]
    tool: str
    args: Any
    decision: Verdict
    reason: str
