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
from dataclasses import dataclass
from typing import Any, Mapping

from services.hook_types import HookOutcome
from services.processes import kill_group

log = logging.getLogger(__name__)

#: Keys every payload carries (null when the caller has no value), so hook scripts see a fixed shape.
PAYLOAD_KEYS = ("session_id", "agent_kind", "tool_name", "tool_input", "tool_result", "prompt")
#: A runaway hook must not eat memory: only this much of each stream is kept (the rest is drained).
MAX_OUTPUT_BYTES = 1 << 20
#: Context a single hook may inject (Claude Code caps additionalContext at the same size).
MAX_CONTEXT_CHARS = 10_000
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


def build_stdin(event: str, payload: Mapping[str, Any], cwd: str) -> bytes:
    """The JSON document on the hook's stdin: fixed keys first, then any extras the caller passed."""
    body: dict[str, Any] = dict.fromkeys(PAYLOAD_KEYS)
    body.update(payload)
    body["hook_event_name"] = event
    body["cwd"] = cwd
    return json.dumps(body, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")


async def execute(
    command: str, stdin: bytes, timeout: float, *, cwd: str | None = None, env: Mapping[str, str] | None = None
) -> ShellResult:
    """Run `command` in its own session (process group) so a timeout can kill everything it spawned."""
    try:
        proc = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
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
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
    )


def interpret(event: str, command: str, result: ShellResult, timeout: float) -> HookOutcome:
    """Turn a finished hook into an outcome; every failure other than exit 2 is logged and passes."""
    if result.error:
        log.warning("%s hook `%s` could not start: %s", event, command, result.error)
        return HookOutcome()
    if result.timed_out:
        log.warning("%s hook `%s` timed out after %g s; its process group was killed", event, command, timeout)
        return HookOutcome()
    if result.returncode == 2:
        reason = result.stderr.strip() or f"Blocked by {event} hook `{command}` (exit code 2, no reason given)."
        return HookOutcome(blocked=True, reason=reason)
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
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            return _from_json(event, command, obj)
    return HookOutcome(context=(_cap(text),))


def _from_json(event: str, command: str, obj: dict[str, Any]) -> HookOutcome:
    """Claude Code's structured output: block via continue/decision/permissionDecision, else context."""
    default = f"Blocked by {event} hook `{command}`."
    specific = obj.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    if obj.get("continue") is False:
        return HookOutcome(blocked=True, reason=_str(obj.get("stopReason")) or default)
    if obj.get("decision") == "block":
        return HookOutcome(blocked=True, reason=_str(obj.get("reason")) or default)
    if specific.get("permissionDecision") == "deny":
        return HookOutcome(blocked=True, reason=_str(specific.get("permissionDecisionReason")) or default)
    texts = (_str(specific.get("additionalContext")), _str(obj.get("systemMessage")))
    return HookOutcome(context=tuple(_cap(t) for t in texts if t))


def _str(value: Any) -> str:
    if value is None:
        return ""
    return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).strip()


def _cap(text: str) -> str:
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[:MAX_CONTEXT_CHARS] + "\n[hook output truncated]"


async def _communicate(proc: asyncio.subprocess.Process, data: bytes) -> tuple[bytes, bytes]:
    """Feed stdin while draining both pipes, so a chatty hook can never deadlock on a full pipe."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    _, out, err = await asyncio.gather(_feed(proc.stdin, data), _read_capped(proc.stdout), _read_capped(proc.stderr))
    await proc.wait()
    return out, err


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the hook does not read its stdin: fine
    finally:
        stdin.close()


async def _read_capped(stream: asyncio.StreamReader) -> bytes:
    buf = bytearray()
    while chunk := await stream.read(_READ_CHUNK):
        if len(buf) < MAX_OUTPUT_BYTES:
            buf += chunk[: MAX_OUTPUT_BYTES - len(buf)]
    return bytes(buf)


