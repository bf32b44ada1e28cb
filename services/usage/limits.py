"""What one message may still do (Q1, A1-A4): how many subagents and team runs it starts, and what it spent.

A `MessageLimits` is made when a turn or a clock run starts and travels in its run context to every
model call of that message: its subagents and team members carry their parent's. It holds

- the subagent and team calls of the message: `plan_round` decides, when the model's reply arrives,
  which of its `subagent_run` / `team_run` calls may run, by their order in the reply: at most
  `subagent.max_calls_per_round` of one reply and `subagent.max_calls_per_message` in all (a team run
  is one call; its members are capped by the team's size). The calls run concurrently, so the choice is
  made there, never by which call reaches its tool first. `admit` is what the tool asks; a call over a
  cap gets a clear result, and no subagent or model call is made for it;
- the tokens its model calls have spent so far (`live`), which the quota service adds to its in-flight
  tally as each call returns, so that the next call of any running message sees them before it starts
  (services/usage/quota.py); `exempt` says whether the quota binds it at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.errors import ToolError

#: The calls the caps count.
CAPPED = frozenset({"subagent_run", "team_run"})
ROUND_CAP = ("Not run: at most {max} subagent_run and team_run calls run per round "
             "(subagent.max_calls_per_round), and this was call {n} of this round. Wait for the results of the "
             "others; start it in a later round only if it is still needed.")
MESSAGE_CAP = ("Not run: this message has already started {max} subagents and team runs, its limit "
               "(subagent.max_calls_per_message). Finish with the results you have.")


@dataclass
class MessageLimits:
    #: The chat whose quota binds the message (a subagent's or clock run's too).
    session: str
    #: The quota does not stop it (an admin's message with quota.admins_exempt, or its subagents).
    exempt: bool = False
    #: Its spend is in the quota's in-flight tally until the turn's tokens are added to the day's counters.
    #: False for a run nobody records (Studio, replay): it is checked, but leaves no tally behind.
    tally: bool = True
    #: Tokens its model calls spent that are in the in-flight tally (the quota service keeps it).
    live: int = 0
    #: The day's counters have its tokens: what it still spends goes to them directly.
    closed: bool = False
    started: int = 0
    _admitted: set[str] = field(default_factory=set)
    _refused: dict[str, str] = field(default_factory=dict)

    def plan_round(self, calls: Iterable[Mapping[str, Any]], per_round: int, per_message: int) -> None:
        """Decide which subagent and team calls of one model reply run, in the reply's order."""
        n = 0
        for call in calls:
            if call.get("name") not in CAPPED:
                continue
            call_id = str(call.get("id") or "")
            n += 1
            # This reply decides its calls: an id an earlier reply used (a provider that numbers its calls
            # per reply) keeps no decision of that reply.
            self._admitted.discard(call_id)
            self._refused.pop(call_id, None)
            if n > per_round:
                self._refused[call_id] = ROUND_CAP.format(max=per_round, n=n)
            elif self.started >= per_message:
                self._refused[call_id] = MESSAGE_CAP.format(max=per_message)
            else:
                self.started += 1
                self._admitted.add(call_id)

    def admit(self, call_id: str, per_message: int) -> None:
        """Raise the refusal of a call over a cap. A call no reply planned (called outside the model step)
        counts against the message's cap as it comes."""
        if call_id in self._refused:
            raise ToolError(self._refused[call_id])
        if call_id and call_id in self._admitted:
            return
        if self.started >= per_message:
            raise ToolError(MESSAGE_CAP.format(max=per_message))
        self.started += 1
        if call_id:
            self._admitted.add(call_id)
