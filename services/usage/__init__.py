"""Usage, quotas and the query log (Q1-Q3).

- `meter`: `UsageMeter`, a thread-safe accumulator a tool call's run context carries: subagents and team
  members add what they spent, and the execute step folds the sum into the turn's usage exactly once.
- `quota`: `Quota`, the per-session and global daily token counters, the check before a turn and before
  each model call, and the in-flight tally of the messages still running.
- `limits`: `MessageLimits`, what one message may still do: its subagent and team calls, its spend.
- `querylog`: `QueryLog`, one row per trigger to its final response, and its reader (`ania logs`).

The runtime (ania/operations.py) ties them to a turn: check the quota, open the row, and when the turn
ends add its tokens (already folded: model calls, compaction, subagents) to the day's counters once.
"""

from services.usage.limits import MessageLimits
from services.usage.meter import UsageMeter
from services.usage.querylog import MAX_CALLS, STATUSES, QueryFilter, QueryLog, count_ops, op_kinds, read_ops
from services.usage.quota import DayUsage, Quota

__all__ = ["MAX_CALLS", "STATUSES", "DayUsage", "MessageLimits", "QueryFilter", "QueryLog", "Quota", "UsageMeter",
           "count_ops", "op_kinds", "read_ops"]
