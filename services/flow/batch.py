"""Which waiting messages a turn answers, and how the model reads them (F1, F2).

`take_batch` takes members in turn (round robin by sender, in the order each first wrote), so one
member's flood cannot push another member's message out of the next turn; within the bounds, a sender
whose next message does not fit is done for this batch (their order is kept). `batch_text` lists the
messages oldest first, each with its number, time (UTC) and sender: a stable format, so the same
messages read the same bytes. A batch of one is not wrapped: it reads as a single message always did.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

HEADER = "[{n} messages arrived for you since your last reply, oldest first; answer them together]"
LINE = "[{i}] {at} UTC [{sender}] {body}"


def take_batch(waiting: Sequence[T], sender: Callable[[T], str], runes: Callable[[T], int], *,
               max_messages: int, max_runes: int) -> tuple[list[T], list[T]]:
    """(taken, left), each in arrival order. The first message is always taken, whatever its size."""
    queues: dict[str, list[int]] = {}
    for i, item in enumerate(waiting):
        queues.setdefault(sender(item), []).append(i)
    taken: list[int] = []
    used = 0
    done: set[str] = set()
    while len(taken) < max_messages and len(done) < len(queues):
        for who, idx in queues.items():
            if who in done:
                continue
            if not idx:
                done.add(who)
                continue
            size = runes(waiting[idx[0]])
            if taken and used + size > max_runes:
                done.add(who)
                continue
            taken.append(idx.pop(0))
            used += size
            if len(taken) >= max_messages:
                break
    chosen = set(taken)
    return ([waiting[i] for i in sorted(chosen)],
            [item for i, item in enumerate(waiting) if i not in chosen])


def batch_text(items: Sequence[tuple[str, float, str]]) -> str:
    """What the model reads for (sender, time.time() of arrival, body) messages; one message: its body."""
    if len(items) == 1:
        return items[0][2]
    lines = [HEADER.format(n=len(items))]
    lines += [LINE.format(i=i, at=time.strftime("%H:%M:%S", time.gmtime(at)), sender=who, body=body)
              for i, (who, at, body) in enumerate(items, 1)]
    return "\n".join(lines)


def least_privileged(senders: Sequence[str], is_admin: Callable[[str], bool]) -> str:
    """Whose rights a batch runs with: a member when any wrote in it (the last such), else the last admin.
    A member's message batched with an admin's gets no admin rights, and its approvals go where that
    member's would go."""
    members = [s for s in senders if not is_admin(s)]
    return (members or list(senders))[-1]
