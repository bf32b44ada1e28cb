"""The parts of subagents and teams on their own: the budget arithmetic, the cut, the bridge, the team store,
the usage meter."""

from __future__ import annotations

import threading

import pytest

from ania.platforms.bridge import ChatBridge, SubagentBridge
from core.errors import ToolError
from core.settings import SubagentSettings
from services.store import AppStore
from services.subagents import NOT_FOR_SUBAGENTS, budget, clamp_note, clamp_timeout, cut
from services.teams import GLOBAL, Member, Team, TeamStore, check_name
from services.usage import UsageMeter

S = SubagentSettings()  # default 120 s, max 600 s, 30 s kept for the parent, at least 5 s


@pytest.mark.parametrize("asked, seconds", [(None, 120), (0, 1), (-5, 1), (1, 1), (599, 599), (600, 600),
                                            (601, 600), (10**18, 600), (-(10**18), 1), (10**400, 600)])
def test_timeout_is_clamped_as_an_integer(asked, seconds):
    assert clamp_timeout(asked, S) == seconds
    assert budget(asked, S, None) == float(seconds)


@pytest.mark.parametrize("asked, remaining, seconds", [
    (None, 300.0, 120.0),  # plenty left: the request as asked
    (600, 300.0, 270.0),  # shrunk: 30 s kept for the parent's reply
    (10**18, 100.0, 70.0),
    (None, 35.0, 5.0),  # exactly the minimum
    (1, 300.0, 1.0),
])
def test_budget_shrinks_to_the_parents_time(asked, remaining, seconds):
    assert budget(asked, S, remaining) == pytest.approx(seconds)


@pytest.mark.parametrize("remaining", [34.9, 30.0, 3.0, 0.0, -2.0])
def test_too_little_time_is_refused(remaining):
    with pytest.raises(ToolError, match=r"^Not started: only \d+ s of this message's time budget are left and 30 s"):
        budget(None, S, remaining)


def test_clamp_note_only_when_clamped():
    assert clamp_note(None, S) == clamp_note(30, S) == ""
    assert clamp_note(0, S) == "[timeout_sec 0 is outside 1..600; 1 was used]\n"


def test_cut_counts_runes_and_says_how_much():
    assert cut("汉" * 10, 10) == "汉" * 10
    assert cut("汉字" * 6, 10) == "汉字" * 5 + "\n[cut: 2 of 12 characters not shown (subagent.max_result_len)]"


def test_no_recursion_tools():
    assert {"subagent_run", "subagent_list", "subagent_cancel", "team_run", "team_save", "team_delete", "team_list",
            "todo_write"} == NOT_FOR_SUBAGENTS


async def test_subagent_bridge_drops_text_and_defers_images(tmp_path):
    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    parent = ChatBridge(send, tmp_path / "outbox", history=["earlier message"])
    bridge = SubagentBridge(parent, "subagent")
    assert (await bridge.send_text("thinking")).startswith("not sent")
    assert sent == []
    assert await bridge.send_file("../../etc/x.txt", "aGk=") == "sent"
    assert sent == [f"[file saved: {tmp_path / 'outbox' / 'x.txt'}]"]  # the parent's chat, its outbox
    assert await bridge.get_msg_history(5) == "earlier message"  # the parent's session
    assert (await bridge.load_images()).startswith("Not here: images are loaded by the main assistant")
    assert bridge.take_loaded_images() == [] and parent.take_loaded_images() == []


@pytest.mark.parametrize("name", ["review", "评审组", "レビュー", "검토", "a_b-c", "x" * 32, "汉" * 32])
def test_valid_names(name):
    assert check_name(f"  {name} ") == name


@pytest.mark.parametrize("name", ["", " ", "a b", "bad!", "x" * 33, "汉" * 33, "emoji😀", "dot.name", "../up",
                                  "tab\tname", "line\nbreak", "ｆｕｌｌ"])
def test_invalid_names(name):
    with pytest.raises(ToolError, match=r"^invalid team name"):
        check_name(name)


def test_team_store_scopes_and_shadowing(tmp_path):
    store = AppStore(tmp_path / "ania.db")
    teams = TeamStore(store)
    one = (Member("a", "role a"),)
    assert teams.save(Team("t", "Session one.", one, "g:1")) is False
    assert teams.save(Team("t", "Global one.", one, GLOBAL)) is False
    assert teams.save(Team("t", "Session again.", one, "g:1")) is True  # replaced
    assert teams.find("g:1", "t").purpose == "Session again."  # the session's shadows the global
    assert teams.find("g:2", "t").purpose == "Global one."
    assert [t.scope for t in teams.visible("g:1")] == ["g:1", GLOBAL]
    assert teams.delete("g:1", "t") and not teams.delete("g:1", "t")
    assert teams.find("g:1", "t").purpose == "Global one."
    store.close()


def test_usage_meter_adds_up_across_threads():
    meter = UsageMeter()

    def spend() -> None:
        for _ in range(1000):
            meter.add({"total_tokens": 3, "requests": 1})

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert meter.total() == {"total_tokens": 24000, "requests": 8000}
    meter.add(None)
    assert UsageMeter().total() == {}


async def test_recursion_tools_refuse_inside_a_subagent_even_if_offered(make_services):
    """Defence in depth: were a subagent's executor ever given them, the tools still refuse."""
    from core.tool import NoParams
    from services.subagents import SubagentRequest
    from tests.conftest import run_context
    from tools.subagent import SubagentRunParams, SubagentRunTool
    from tools.team import TeamListTool, TeamRunParams, TeamRunTool

    services = await make_services()
    for kind in ("subagent", "team_member"):
        ctx = run_context(services, agent_kind=kind)
        with pytest.raises(ToolError, match="cannot start subagents"):
            await SubagentRunTool().execute(SubagentRunParams(task="x"), ctx)
        with pytest.raises(ToolError, match="no team tools"):
            await TeamRunTool().execute(TeamRunParams(name="t", task="x"), ctx)
        with pytest.raises(ToolError, match="no team tools"):
            await TeamListTool().execute(NoParams(), ctx)
    with pytest.raises(ToolError, match="no runner is bound"):  # services without an engine: a clear error
        await services.subagents.run(run_context(services), SubagentRequest(task="x", budget_sec=1))
