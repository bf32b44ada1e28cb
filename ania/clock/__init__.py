"""The clock's runtime part: the runner behind `services.clock` (the clock graph on the engine's checkpointer)
and the `/clock` command. The scheduler, the tasks and the log are services/clock/."""

from ania.clock.command import clock_command
from ania.clock.runner import ClockRunner

__all__ = ["ClockRunner", "clock_command"]
