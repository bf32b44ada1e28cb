"""The parts of a chat's message flow that need no engine (F1, F2): which waiting messages the next turn
takes (round robin by sender, bounded), what the model reads for a batch, each member's token bucket,
and the durable inbox in ania.db. ania/flow/ runs them."""

from services.flow.batch import batch_text, least_privileged, take_batch
from services.flow.bucket import Buckets, Notices
from services.flow.inbox import Inbox, InboxRow

__all__ = ["Buckets", "Inbox", "InboxRow", "Notices", "batch_text", "least_privileged", "take_batch"]
