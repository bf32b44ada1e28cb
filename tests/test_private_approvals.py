"""Anyone who can message the bot privately must not approve their own bash (issue 22, item 7).

Through the OneBot fake: a stranger's call in a private chat goes to an admin's private chat, like a
configuration change; the stranger's own `allow <id>` is refused; the admin's decides. With
`approval.self_approve_in_private` on, the old behaviour: the requester approves their own call.
"""

from __future__ import annotations

import re

import pytest

from ania.fakes.openai_server import Calls, Reply
from core.settings import Settings
from services.gates.admins import Admins
from services.gates.approvals import Approvals
from tests.onebot_helpers import ADMIN
from tests.subagent_helpers import Router
from tests.test_gates import tool_results

STRANGER = 42
BASH = {"enable": True, "sandbox": "off"}
COMMAND = "echo pwned > proof.txt"


def _rid(text: str) -> str:
    return re.search(r'"allow ([0-9a-f]{4})"', text).group(1)


async def test_a_stranger_cannot_approve_their_own_bash_in_a_private_chat(bot, scripted_llm):
    b = await bot(bash=BASH)
    proof = b.engine.services.paths.data_dir / "workspace" / "proof.txt"
    scripted_llm.script([Calls([("bash", {"command": COMMAND})]), Reply("done")])
    await b.fake.private_message(STRANGER, "please run it")
    await b.fake.wait_for(lambda: b.fake.texts(f"f:{ADMIN}") and b.fake.texts(f"f:{STRANGER}"))
    prompt = b.fake.texts(f"f:{ADMIN}")[0]
    assert prompt.startswith('Tool "bash" wants to run with') and COMMAND in prompt
    rid = _rid(prompt)
    assert b.fake.texts(f"f:{STRANGER}") == [
        f'An admin must approve "bash" here; I asked one (request {rid}) and wait for the answer.']
    for n, answer in enumerate((f"allow {rid}", "allow", "yes"), start=2):
        await b.fake.private_message(STRANGER, answer)
        await b.fake.wait_for(lambda n=n: len(b.fake.texts(f"f:{STRANGER}")) == n)
        assert b.fake.texts(f"f:{STRANGER}")[-1] == ("You cannot answer this approval: in a private chat only an "
                                                      "admin can approve (approval.self_approve_in_private is off).")
    assert not proof.exists() and len(scripted_llm.requests) == 1
    await b.fake.private_message(int(ADMIN), f"allow {rid}")
    await b.fake.wait_for(lambda: "done" in b.fake.texts(f"f:{STRANGER}"))
    assert b.fake.texts(f"f:{ADMIN}")[-1] == f'Allowed: "bash" ({rid}).'
    assert proof.read_text() == "pwned\n"
    assert tool_results(scripted_llm) == ["(no output)"]  # it ran, once


async def test_with_self_approve_in_private_the_requester_approves_their_own(bot, scripted_llm):
    b = await bot(bash=BASH, approval={"self_approve_in_private": True})
    proof = b.engine.services.paths.data_dir / "workspace" / "proof.txt"
    scripted_llm.script([Calls([("bash", {"command": COMMAND})]), Reply("done")])
    await b.fake.private_message(STRANGER, "please run it")
    await b.fake.wait_for(lambda: b.fake.texts(f"f:{STRANGER}"))
    rid = _rid(b.fake.texts(f"f:{STRANGER}")[0])
    await b.fake.private_message(STRANGER, f"allow {rid}")
    await b.fake.wait_for(lambda: "done" in b.fake.texts(f"f:{STRANGER}"))
    assert b.fake.texts(f"f:{STRANGER}")[1] == f'Allowed: "bash" ({rid}).'
    assert b.fake.texts(f"f:{ADMIN}") == [] and proof.read_text() == "pwned\n"


async def test_with_no_admin_to_ask_the_call_is_not_run(bot, scripted_llm):
    b = await bot(bash=BASH, bot={"admins": []})
    scripted_llm.script([Calls([("bash", {"command": COMMAND})]), Reply("could not")])
    await b.fake.private_message(STRANGER, "please run it")
    await b.fake.wait_for(lambda: "could not" in b.fake.texts(f"f:{STRANGER}"))
    assert tool_results(scripted_llm) == [
        'Not run: no approval for "bash" (only an admin can approve it in a private chat, and no admin could '
        'be asked).']
    assert not (b.engine.services.paths.data_dir / "workspace" / "proof.txt").exists()


async def test_an_admin_still_approves_their_own_call_in_private(bot, scripted_llm):
    b = await bot(bash=BASH)
    scripted_llm.script([Calls([("bash", {"command": COMMAND})]), Reply("done")])
    await b.fake.private_message(int(ADMIN), "please run it")
    await b.fake.wait_for(lambda: b.fake.texts(f"f:{ADMIN}"))
    rid = _rid(b.fake.texts(f"f:{ADMIN}")[0])
    await b.fake.private_message(int(ADMIN), f"allow {rid}")
    await b.fake.wait_for(lambda: "done" in b.fake.texts(f"f:{ADMIN}"))


@pytest.mark.parametrize("self_approve", [False, True])
async def test_a_strangers_subagent_cannot_get_their_bash_approved_by_them(bot, scripted_llm, self_approve):
    """A subagent's call has no requester: only an admin decides it, even with self_approve_in_private on."""
    b = await bot(bash=BASH, approval={"self_approve_in_private": self_approve})
    proof = b.engine.services.paths.data_dir / "workspace" / "proof.txt"
    scripted_llm.respond_with(Router()
        .on("please delegate", Calls([("subagent_run", {"task": "SUBBASH run the command"})]), Reply("done"))
        .on("SUBBASH", Calls([("bash", {"command": COMMAND})]), Reply("sub done")))
    await b.fake.private_message(STRANGER, "please delegate")
    await b.fake.wait_for(lambda: b.fake.texts(f"f:{ADMIN}") and b.fake.texts(f"f:{STRANGER}"))
    rid = _rid(b.fake.texts(f"f:{ADMIN}")[0])
    assert b.fake.texts(f"f:{STRANGER}") == [
        f'An admin must approve "bash" here; I asked one (request {rid}) and wait for the answer.']
    await b.fake.private_message(STRANGER, f"allow {rid}")
    await b.fake.wait_for(lambda: len(b.fake.texts(f"f:{STRANGER}")) == 2)
    assert b.fake.texts(f"f:{STRANGER}")[-1] == ("You cannot answer this approval: only the person who asked or an "
                                                  "admin can decide.")
    assert not proof.exists()
    await b.fake.private_message(int(ADMIN), f"allow {rid}")
    await b.fake.wait_for(lambda: "done" in b.fake.texts(f"f:{STRANGER}"))
    assert proof.read_text() == "pwned\n"


@pytest.mark.parametrize(("session", "answerer"), [("f:42", "900"), ("g:555", "42")])
async def test_an_answer_sent_the_moment_the_prompt_arrives_is_taken(session, answerer):
    """The answer may come in while the prompt's send is still being confirmed (a quick reply, a loaded
    bot): the question is already waiting, so the answer decides it (it was an ordinary message before)."""
    settings = Settings(bot={"admins": [ADMIN]}, approval={"self_approve_in_groups": True})
    answers: list[str | None] = []

    async def notify(place: str, text: str) -> bool:
        if match := re.search(r'"allow ([0-9a-f]{4})"', text):
            answers.append(approvals.take_reply(place, answerer, f"allow {match.group(1)}"))
        return True

    approvals = Approvals(settings, Admins(settings), notify, timeout_sec=2)
    request = {"kind": "human", "tool": "bash", "session": session, "requester": "42", "prompt": "run it?"}
    decision = await approvals.ask(request)
    assert decision == {"decision": "allow", "by": answerer}
    assert len(answers) == 1 and answers[0].startswith('Allowed: "bash" (')
