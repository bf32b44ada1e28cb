"""What `/stop` stopped, and the reply that says so, wherever the chat's turn runs (issue 25).

In one process the chat's queue and its turn are here. In a cluster the /stop arrives at the gateway's
message entry while the chat's turn runs on a worker: the gateway stops what it holds itself, and when
that is nothing it asks the others (the signal `STOP`, services/cluster/signals.py); the process holding
the chat applies the same per-author rules there (ania/flow/chats.py `Chats.stop_here`) and answers with
its counts. The reply is then the one a single process gives, with the holder's counts: the person who
typed /stop cares what was stopped, not where it ran. Only when no process answers within `WAIT_SEC`
(no process holds the chat) is it "Nothing to stop."
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from services.cluster import Payload

#: The signal's topic: {"session": key, "user": who typed /stop}.
STOP = "stop"
#: How long the gateway waits for the process holding the chat (an idle chat: nobody answers).
WAIT_SEC = 1.0


@dataclass(frozen=True)
class Stopped:
    """Messages (waiting or in the running turn) and scheduled-task runs stopped, and those left because they
    belong to someone else."""

    messages: int = 0
    messages_others: int = 0
    runs: int = 0
    runs_others: int = 0

    def __bool__(self) -> bool:
        """Whether there was anything of that chat here (stopped or not)."""
        return any(asdict(self).values())

    def payload(self) -> Payload:
        return asdict(self)

    @classmethod
    def of(cls, payload: Payload) -> Stopped:
        """Counts a holder sent back (anything that is not a count reads as 0)."""
        def count(name: str) -> int:
            value = payload.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

        return cls(**{f.name: count(f.name) for f in fields(cls)})

    def text(self) -> str:
        done = ([f"Stopped {self.messages} running or queued message(s)."] if self.messages else []) + (
            [f"Stopped {self.runs} scheduled task run(s) in progress."] if self.runs else [])
        if done:
            return " ".join(done)
        if self.messages_others:
            return "Only an admin or the person who asked can stop a running message."
        if self.runs_others:
            return "Only an admin or the person who created the task can stop a scheduled task's run."
        return "Nothing to stop."
