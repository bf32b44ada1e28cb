"""Usage accounting outside the main loop (Q2); quotas and the query log join this package later.

- `meter`: `UsageMeter`, a thread-safe accumulator a tool call's run context carries: subagents and team
  members add what they spent, and the execute step folds the sum into the turn's usage exactly once.
"""

from services.usage.meter import UsageMeter

__all__ = ["UsageMeter"]
