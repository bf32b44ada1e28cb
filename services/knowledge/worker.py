"""The keyword index's part of an add, in a process of its own, beside the store's write.

Chroma's write holds the GIL from start to end, so a thread of ours cannot run beside it (measured: a
spinning thread runs at 3 % of its speed then); another process can, on the machine's other core. The
worker is a child of the bot (this module's `main`, the environment without secrets), one per knowledge
base, fed one document at a time over its stdin and stdout, a JSON line each way: it works out the chunks'
terms and inserts them into FTS5 while the store writes, in a transaction it keeps open until the store's
write returned. A memory (one chunk) and any document of fewer than `MIN_CHUNKS` chunks are indexed in the
bot's process, after the store's write, as before.

The order the stamps rely on stays as it was (services/knowledge/index.py): the index's transaction commits
with the store's new stamp only after the store's write succeeded; when the store's write fails, the
worker rolls back and the scope keeps the mark `KeywordIndex.begin` set, so its next search rebuilds it.
A worker that fails, dies or does not answer within `REPLY_TIMEOUT_SEC` is ended (its open transaction
dies with it: SQLite keeps nothing of it) and the add does the index's part in the bot's process, as it
did before there was a worker; one log line says so, and the worker is not started again for
`RETRY_AFTER_SEC`. An add returns only once the index holds the document or the scope is left to a rebuild.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, cast, get_args

from services.knowledge.index import Chunk, KeywordIndex
from services.knowledge.text import Analyzer, Mode
from services.processes import scrubbed_env

log = logging.getLogger(__name__)

#: Fewer chunks than this are indexed in the bot's process: a round trip costs more than their terms.
MIN_CHUNKS = 8
#: Seconds the worker may take for one document (FTS5 waits up to 30 s for another writer's lock).
REPLY_TIMEOUT_SEC = 120.0
#: The request pipe's size: a document's request fits whole, so writing it returns at once. A write that
#: waits for the reader would need the GIL back for each part, which the store's write holds to its end.
PIPE_BYTES = 1 << 20
#: Seconds without a worker (indexing in the bot's process) after one failed.
RETRY_AFTER_SEC = 60.0


class IndexWorker:
    """The bot's side: starts the worker when first needed, hands it documents, ends it on `close`."""

    def __init__(self, path: Path, mode: Mode, *, min_chunks: int = MIN_CHUNKS,
                 retry_after_sec: float = RETRY_AFTER_SEC) -> None:
        self.path = path
        self.mode: Mode = mode
        self.min_chunks = min_chunks
        self.retry_after_sec = retry_after_sec
        #: Seconds to wait for the worker's answer to one document (a test may set less).
        self.reply_timeout_sec = REPLY_TIMEOUT_SEC
        #: Documents whose index part the worker could not finish (the bot's process did it instead).
        self.fallbacks = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._down_until = 0.0

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def add(self, index: KeywordIndex, scope: str, chunks: Sequence[Chunk], mark: str | None,
            store_write: Callable[[], str]) -> str:
        """`store_write()` (the store's write, returning its new stamp) with the index's part of the add beside
        it in the worker, or after it in this process when the worker cannot take it; the store's stamp."""
        start = time.perf_counter()
        sent = len(chunks) >= self.min_chunks and self._send(scope, chunks, mark)
        index.add_seconds += time.perf_counter() - start
        try:
            stamp = store_write()
        except BaseException:
            if sent:
                self._finish(None)
            raise
        start = time.perf_counter()
        done = sent and self._finish(stamp)
        index.add_seconds += time.perf_counter() - start  # the wait beyond the store's write
        if not done:
            index.add(scope, chunks, mark, stamp)
        return stamp

    def _send(self, scope: str, chunks: Sequence[Chunk], mark: str | None) -> bool:
        if time.monotonic() < self._down_until:
            return False
        rows = [[c.id, c.doc_id, c.title, c.pos, c.scope, c.text] for c in chunks]
        line = json.dumps({"op": "add", "scope": scope, "mark": mark, "chunks": rows}, ensure_ascii=False).encode()
        try:
            _send_line(self._start(), line)
        except OSError as e:
            self._fail(f"it could not be reached ({type(e).__name__}: {e})")
            return False
        return True

    def _finish(self, stamp: str | None) -> bool:
        """Commit with `stamp` (roll back when None); whether the worker did. When not, it rolled back or
        is gone, and its lock on the file with it."""
        try:
            _send_line(self._start(), json.dumps({"op": "end", "stamp": stamp}).encode())
            reply = self._reply()
        except (OSError, ValueError) as e:
            self._fail(str(e) or type(e).__name__)
            return False
        if reply.get("error"):
            self._fail(f"it failed: {reply['error']}")
            return False
        return True

    def _reply(self) -> dict[str, Any]:
        proc = self._start()
        stdout = _pipe(proc.stdout)
        ready, _, _ = select.select([stdout], [], [], self.reply_timeout_sec)
        line = stdout.readline() if ready else b""
        if not line:
            raise ValueError("no answer within the time allowed" if not ready else "it ended")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        if self._proc is not None:
            raise BrokenPipeError(f"it exited with status {self._proc.returncode}")
        self._proc = subprocess.Popen(  # noqa: S603 - our own module, by this interpreter, no shell
            [sys.executable, "-c", "from services.knowledge.worker import main; main()", str(self.path), self.mode],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=scrubbed_env(), close_fds=True)
        if self._proc.stdin is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
            with contextlib.suppress(OSError):  # at most /proc/sys/fs/pipe-max-size; a smaller pipe only waits more
                fcntl.fcntl(self._proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        return self._proc

    def _fail(self, why: str) -> None:
        self.fallbacks += 1
        log.warning("keyword index worker for %s: %s; indexing in the bot's process, a new worker in %g s",
                    self.path, why, self.retry_after_sec)
        self.close(kill=True)
        self._down_until = time.monotonic() + self.retry_after_sec

    def close(self, *, kill: bool = False) -> None:
        """End the worker: its stdin closed, it leaves (killed if it does not within 5 s, or at once with `kill`:
        its open transaction, if any, dies with it)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if kill:
            proc.kill()
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _send_line(proc: subprocess.Popen[bytes], line: bytes) -> None:
    stdin = _pipe(proc.stdin)
    stdin.write(line + b"\n")
    stdin.flush()


def _pipe(pipe: IO[bytes] | None) -> IO[bytes]:
    if pipe is None:
        raise BrokenPipeError("no pipe")
    return pipe


def serve(path: Path, mode: Mode, requests: IO[bytes], replies: IO[bytes]) -> None:
    """The worker's side: for each document, `stage` on "add", then `settle` on "end" and one reply."""
    index = KeywordIndex(Analyzer(mode), path, repair=False)
    staged: int | None = None
    error: str | None = None
    for line in requests:
        message = json.loads(line)
        try:
            if message["op"] == "add":
                error = None
                staged = index.stage(message["scope"], [Chunk(*row) for row in message["chunks"]], message["mark"])
                continue
            if error is None:
                index.settle(staged, message["stamp"])
        except Exception as e:  # noqa: BLE001 - told to the bot, which indexes in its own process instead
            error = f"{type(e).__name__}: {e}"
            if message["op"] == "add":
                continue
        replies.write(json.dumps({"error": error} if error else {"ok": True}).encode() + b"\n")
        replies.flush()
        error = None
    index.close()


def main() -> None:
    """`python -c "from services.knowledge.worker import main; main()" <index file> <analyzer>`."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print goes to stderr, never into the replies
    mode = sys.argv[2]
    if mode not in get_args(Mode):
        raise SystemExit(f"unknown analyzer {mode!r}")
    serve(Path(sys.argv[1]), cast("Mode", mode), sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
