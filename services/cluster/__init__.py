"""What the processes of a cluster share besides the store: signals between them (services/cluster/signals.py)."""

from services.cluster.signals import Handler, LocalSignals, Payload, PgSignals, Signals, open_signals, quick_commit

__all__ = ["Handler", "LocalSignals", "Payload", "PgSignals", "Signals", "open_signals", "quick_commit"]
