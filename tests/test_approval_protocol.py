"""The approval protocol's types (services/gates/approval_types.py) against what the real loop stores and logs.

The request is kept in the checkpoint as the gate writes it, and Studio, the chat and a panel read it: the
TypedDicts must name exactly its keys, and its values must stay what they were (any change is a change
of the stored bytes).
"""

from __future__ import annotations

from typing import get_args

from ania.fakes.openai_server import Calls, Reply
from checkpoints.factory import thread_config
from services.gates.approval_types import (
    ALLOW_WORDS,
    DENY_WORDS,
    AnswerDict,
    ApprovalKind,
    ApprovalOp,
    ApprovalRequest,
    Decision,
)
from services.gates.approvals import parse_reply
from tests.conftest import make_settings
from tests.test_gates import wait_for


async def test_the_paused_request_and_the_logged_decision_match_their_types(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"], "self_approve_in_private": True}))
    scripted_llm.script([Calls([("time", {"timezone": "Asia/Shanghai"})]), Reply("done")])
    task = await chat.entry.submit("f:u1", "u1", "time?")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:u1"))
    (pending,) = (await chat.engine.graph.aget_state(thread_config("f:u1"))).interrupts
    request = pending.value
    assert list(request) == list(ApprovalRequest.__annotations__), "the keys, in the order they are stored"
    assert request["kind"] in get_args(ApprovalKind)
    call_id = request["call_id"]
    assert isinstance(call_id, str) and call_id
    assert request == {
        "type": "tool_approval", "kind": "human", "tool": "time", "args": {"timezone": "Asia/Shanghai"},
        "call_id": call_id, "reason": '"time" is in approval.tools.', "session": "f:u1", "requester": "u1",
        "prompt": 'Tool "time" wants to run with {"timezone": "Asia/Shanghai"}\n"time" is in approval.tools.',
    }
    await chat.say("f:u1", "u1", "allow")
    await task
    (op,) = chat.engine.services.store.ops("tool_approval")
    assert set(op["detail"]) == set(ApprovalOp.__annotations__)
    assert op["detail"] == {"kind": "human", "tool": "time", "args": {"timezone": "Asia/Shanghai"},
                            "decision": "allow", "reason": ""}


def test_the_words_and_the_answer_shapes():
    assert ALLOW_WORDS == ("allow", "yes", "允许", "同意") and DENY_WORDS == ("deny", "no", "拒绝")
    assert Decision.__required_keys__ == {"decision", "by"} and Decision.__optional_keys__ == {"reason"}
    assert AnswerDict.__required_keys__ == set() and AnswerDict.__optional_keys__ == {"decision", "by", "reason"}
    assert [parse_reply(w) for w in ("同意", "NO 3f2a", "maybe")] == [("allow", None), ("deny", "3f2a"), None]
