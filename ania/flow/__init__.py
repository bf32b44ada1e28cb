"""The group-chat flow (F1, F2): each chat's messages wait in a bounded queue, admitted per member by a
token bucket, and are answered in batches, one turn at a time per chat (ania/flow/chats.py), with the
durable inbox behind them (ania/flow/flow.py). Message entry (ania/entry.py) hands them in."""

from ania.flow.flow import Flow

__all__ = ["Flow"]
