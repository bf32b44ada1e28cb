"""The scripted model as a process of its own: `python -m bench.soak.model_proc PORT_FILE LOG_FILE HANG_SEC`.

It writes its port to PORT_FILE once it listens, answers with `model.SoakModel`, and on SIGTERM writes the
log of every request (markers, step, the model's own delay) to LOG_FILE as JSON and exits.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

from ania.fakes.openai_server import ScriptedOpenAI
from bench.soak.model import SoakModel


def main(port_file: str, log_file: str, hang_sec: str) -> None:
    model = SoakModel(hang_sec=float(hang_sec))
    server = ScriptedOpenAI().respond_with(model).start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    Path(port_file).write_text(str(server.port))
    count = 0
    while not done.wait(10):  # the server keeps every request body: let them go, keep the count
        with server._lock:
            count += len(server.requests)
            server.requests.clear()
    server.stop()
    with model.lock:
        Path(log_file).write_text(json.dumps({"requests": model.log, "count": count + len(server.requests)}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
