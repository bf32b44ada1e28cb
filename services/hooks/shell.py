"""Running one shell hook as a real subprocess and reading its verdict, Claude Code conventions.

Split in two so each half is testable alone: `execute` does the I/O (stdin payload, capped output,
timeout that kills the whole process group), `interpret` turns exit code and output into a
HookOutcome (exit 0 pass + context, exit 2 block, anything else a logged non-blocking error).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.hooks.types import BLOCKING_EVENTS, HookEvent, HookOutcome
from services.processes import kill_group, spawn_group

log = logging.getLogger(__name__)

#: Keys every payload carries (null when the caller has no value), so hook scripts see a fixed shape.
PAYLOAD_KEYS = ("session_id", "agent_kind", "tool_name", "tool_input", "tool_result", "prompt")
#: A runaway hook must not eat memory: only this much of each stream is kept (the rest is drained).
MAX_OUTPUT_BYTES = 1 << 20
#: Context a single hook may inject (Claude Code caps additionalContext at the same size).
MAX_CONTEXT_CHARS = 10_000
#: A block reason becomes a tool result or a chat reply: it stays short.
MAX_REASON_CHARS = 2_000
#: How long to wait for a killed hook to be reaped before giving up on it.
KILL_GRACE_SEC = 0.5
_READ_CHUNK = 1 << 16


@dataclass(frozen=True)
class ShellResult:
    """What one hook process did. returncode is None when it timed out or could not start."""

    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str = ""  # why it could not start
    #: stdout was longer than MAX_OUTPUT_BYTES and was cut (so a JSON answer cannot be read).
    truncated: bool = False


def build_stdin(event: HookEvent, cwd: str) -> bytes:
    """The JSON document on the hook's stdin (Claude Code's field names)."""
    body: dict[str, Any] = event.payload()
    body["hook_event_name"] = event.name
    body["cwd"] = cwd
    # A lone surrogate (which UTF-8 cannot carry) becomes its JSON escape, so the document stays valid JSON.
    return json.dumps(body, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "backslashreplace")


async def execute(
    command: str, stdin: bytes, timeout: float, *, cwd: str | None = None, env: Mapping[str, str] | None = None
) -> ShellResult:
    """Run `command` in its own session (process group) so a timeout can kill everything it spawned."""
    try:
        proc = await spawn_group(asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        ))
    except OSError as exc:
        return ShellResult(returncode=None, error=str(exc))
    try:
        out, err = await asyncio.wait_for(_communicate(proc, stdin), timeout)
    except TimeoutError:
        kill_group(proc.pid)
        # Bounded: on 3.11 wait() also waits for the pipes, which a daemon that left the group may hold.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), KILL_GRACE_SEC)
        return ShellResult(returncode=None, timed_out=True)
    finally:
        if proc.returncode is None:  # cancelled (e.g. /stop): leave nothing running behind us
            kill_group(proc.pid)
    return ShellResult(
        returncode=proc.returncode,
        stdout=out[0].decode("utf-8", errors="replace"),
        stderr=err[0].decode("utf-8", errors="replace"),
        truncated=out[1],
    )


def interpret(event: str, command: str, result: ShellResult, timeout: float) -> HookOutcome:
    """Turn a finished hook into an outcome, Claude Code's conventions. A crash, a timeout or another
    exit code is logged and passes; output that cannot be read on a blocking event blocks (fail closed)."""
    if result.error:
        log.warning("%s hook `%s` could not start: %s", event, command, result.error)
        return HookOutcome()
    if result.timed_out:
        log.warning("%s hook `%s` timed out after %g s; its process group was killed", event, command, timeout)
        return HookOutcome()
    if result.returncode == 2:
        reason = result.stderr.strip() or f"Blocked by {event} hook `{command}` (exit code 2, no reason given)."
        return HookOutcome(blocked=True, reason=_cap(reason, MAX_REASON_CHARS))
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        log.warning(
            "%s hook `%s` failed with exit code %s (non-blocking): %s",
            event, command, result.returncode, lines[0] if lines else "(no stderr)",
        )
        return HookOutcome()
    text = result.stdout.strip()
    if not text:
        return HookOutcome()
    if not text.startswith("{"):
        return HookOutcome(context=(_cap(text, MAX_CONTEXT_CHARS),))
    obj = None if result.truncated else _json_object(text)
    if obj is None:
        why = f"more than {MAX_OUTPUT_BYTES} bytes" if result.truncated else "not valid JSON"
        return _unreadable(event, command, f"its output starts with '{{' but is {why}")
    return _from_json(event, command, obj)


def failed(event: str, command: str, exc: Exception) -> HookOutcome:
    """An error running the hook itself (not its exit code or output): logged naming the hook, never
    raised into the tool call. On a blocking event its verdict is unknown, so block, as `_unreadable` does."""
    log.error("%s hook `%s` could not be run (%s: %s)", event, command, type(exc).__name__, exc, exc_info=exc)
    if event in BLOCKING_EVENTS:
        return HookOutcome(blocked=True, reason=f"{event} hook `{command}` could not be run "
                                                f"({type(exc).__name__}); blocked to be safe.")
    return HookOutcome()


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _unreadable(event: str, command: str, why: str) -> HookOutcome:
    """Output the runner cannot understand: logged; on a blocking event the hook's intent is unknown, so block."""
    if event in BLOCKING_EVENTS:
        log.warning("%s hook `%s`: %s; blocked to be safe", event, command, why)
        return HookOutcome(blocked=True, reason=f"{event} hook `{command}` gave an answer that could not be read "
                                                f"({why}); blocked to be safe.")
    log.warning("%s hook `%s`: %s; ignored", event, command, why)
    return HookOutcome()


def _from_json(event: str, command: str, obj: dict[str, Any]) -> HookOutcome:
    """Claude Code's structured output: block via continue/decision/permissionDecision, ask, else context."""
    default = f"Blocked by {event} hook `{command}`."
    specific = obj.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    if obj.get("continue") is False:
        return HookOutcome(blocked=True, reason=_cap(_str(obj.get("stopReason")) or default, MAX_REASON_CHARS))
    decision = _str(obj.get("decision")).lower()
    if decision in ("block", "deny"):
        return HookOutcome(blocked=True, reason=_cap(_str(obj.get("reason")) or default, MAX_REASON_CHARS))
    if decision not in ("", "approve", "allow"):
        return _unreadable(event, command, f'unknown "decision" value {obj.get("decision")!r}')
    permission = _str(specific.get("permissionDecision")).lower()
    why = _cap(_str(specific.get("permissionDecisionReason")), MAX_REASON_CHARS)
    if permission == "deny":
        return HookOutcome(blocked=True, reason=why or default)
    if permission == "ask":
        if event == "PreToolUse":
            return HookOutcome(ask=True, reason=why or f"PreToolUse hook `{command}` asks for a human's approval.")
        log.warning("%s hook `%s` answered \"ask\", which only PreToolUse supports; ignored", event, command)
    elif permission not in ("", "allow"):
        return _unreadable(event, command, f'unknown "permissionDecision" value {specific.get("permissionDecision")!r}')
    texts = (_str(specific.get("additionalContext")), _str(obj.get("systemMessage")))
    return HookOutcome(context=tuple(_cap(t, MAX_CONTEXT_CHARS) for t in texts if t))


def _str(value: Any) -> str:
    if value is None:
        return ""
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).strip()


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + "\n[hook output truncated]"


Captured = tuple[bytes, bool]  # (the first MAX_OUTPUT_BYTES, whether there was more)


async def _communicate(proc: asyncio.subprocess.Process, data: bytes) -> tuple[Captured, Captured]:
    """Feed stdin while draining both pipes, so a chatty hook can never deadlock on a full pipe."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None  # noqa: S101 - all PIPE
    _, out, err = await asyncio.gather(_feed(proc.stdin, data), _read_capped(proc.stdout), _read_capped(proc.stderr))
    await proc.wait()
    return out, err


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    """A hook may exit or close its stdin without reading it: fine. asyncio's loop says so with
    BrokenPipeError / ConnectionResetError; uvloop closes the pipe's transport as soon as it sees the
    read end close, and a write after that raises RuntimeError ("the handler is closed")."""
    try:
        stdin.write(data)
        await stdin.drain()
    except (OSError, RuntimeError):
        pass
    finally:
        stdin.close()


async def _read_capped(stream: asyncio.StreamReader) -> Captured:
    buf = bytearray()
    more = False
    while chunk := await stream.read(_READ_CHUNK):
        room = MAX_OUTPUT_BYTES - len(buf)
        more = more or len(chunk) > room
        if room > 0:
            buf += chunk[:room]
    return bytes(buf), more


