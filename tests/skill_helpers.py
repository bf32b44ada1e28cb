"""Test helpers for skills: a skill collection in the shape of Anthropic's public `anthropics/skills`
repository (written here, packed into zips the way GitHub's codeload serves them), hostile archives, and
a small HTTP server on 127.0.0.1 that serves them (plus redirects, hangs and bodies without a length)."""

from __future__ import annotations

import io
import stat
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# --- a collection shaped like anthropics/skills: <repo>-<ref>/skills/<name>/SKILL.md + extra files ------

PDF_FORMS = """---
name: pdf-forms
description: Fill in PDF forms and read their fields. Use when someone sends a PDF form or asks to complete one.
license: Apache-2.0
---

# Filling PDF forms

1. List the fields first: run `python scripts/list_fields.py form.pdf`.
2. Map each field to the user's answers; ask for anything missing.
3. Fill with `scripts/fill_fields.py`, then check the result.

Field types and their quirks are in `reference.md`.
"""
PDF_REFERENCE = """# Field types

- Text: plain strings; long text may be cut by the field's width.
- Checkbox: "/Yes" or "/Off".
- Radio groups: one value per group, named by the option's export value.
"""
PDF_SCRIPT = '''"""List the fields of a PDF form (reference script of the pdf-forms skill)."""
import sys

def main(path: str) -> None:
    print(f"fields of {path}: (a real script would read them)")

if __name__ == "__main__":
    main(sys.argv[1])
'''
BRAND_VOICE = """---
name: brand-voice
description: Write in the club's voice - warm, short, no jargon. Use for announcements and welcome messages.
metadata:
  owner: comms
  version: "1.2"
---

# Club voice

- Warm and direct; first names.
- At most three sentences per paragraph.
- Examples of tone: `examples/tone.md`.
"""
BRAND_TONE = "# Tone\n\nGood: \"Welcome, Mia! Practice is Thursday at 7.\"\nAvoid: \"Dear member, please be advised...\"\n"
TEMPLATE = """---
name: template-skill
description: Replace with a description of what the skill does and when to use it.
---

# Insert instructions below
"""


def collection_files() -> dict[str, str]:
    """Relative path → text, as in the repository (before codeload adds its top folder)."""
    return {
        "README.md": "# Skills\n\nA collection of example skills.\n",
        "skills/pdf-forms/SKILL.md": PDF_FORMS,
        "skills/pdf-forms/reference.md": PDF_REFERENCE,
        "skills/pdf-forms/scripts/list_fields.py": PDF_SCRIPT,
        "skills/pdf-forms/LICENSE.txt": "Apache License 2.0 (abridged for the test)\n",
        "skills/brand-voice/SKILL.md": BRAND_VOICE,
        "skills/brand-voice/examples/tone.md": BRAND_TONE,
        "template/SKILL.md": TEMPLATE,
    }


def make_zip(files: dict[str, str | bytes], top: str = "") -> bytes:
    """A zip of `files` (under the folder `top`, as codeload's `<repo>-<ref>/`)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        if top:
            zf.writestr(f"{top}/", "")
        for rel, content in files.items():
            zf.writestr(f"{top}/{rel}" if top else rel, content)
    return buf.getvalue()


def collection_zip() -> bytes:
    return make_zip(collection_files(), top="skills-main")


# --- hostile archives ---------------------------------------------------------------------------

def zip_slip() -> bytes:
    return make_zip({"good/SKILL.md": BRAND_VOICE, "../evil.txt": "escaped"})


def absolute_path() -> bytes:
    return make_zip({"good/SKILL.md": BRAND_VOICE, "/tmp/ania-absolute-evil.txt": "escaped"})


def with_symlink() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("good/SKILL.md", BRAND_VOICE)
        link = zipfile.ZipInfo("good/passwd")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    return buf.getvalue()


def many_files(n: int = 10_000) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("good/SKILL.md", BRAND_VOICE)
        for i in range(n - 1):
            zf.writestr(f"good/f{i}.txt", "x")
    return buf.getvalue()


def bomb(size: int = 1 << 30) -> bytes:
    """A real zip whose one member unpacks to `size` bytes of zeros (about 1 MB packed for 1 GB)."""
    buf = io.BytesIO()
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("good/SKILL.md", BRAND_VOICE)
        member = zipfile.ZipInfo("good/zeros.bin")
        member.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(member, "w", force_zip64=True) as out:
            for _ in range(size // len(chunk)):
                out.write(chunk)
    return buf.getvalue()


def lying_sizes() -> bytes:
    """A member whose headers claim 10 bytes while its data unpacks to 4 MB."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("good/SKILL.md", BRAND_VOICE)
        zf.writestr("good/big.bin", bytes(4 << 20))
    raw = bytearray(out.getvalue())
    # Local header: size at 22, name length at 26, name at 30; central directory: 24, 28, 46.
    for sig, size_at, len_at, name_at in ((b"PK\x03\x04", 22, 26, 30), (b"PK\x01\x02", 24, 28, 46)):
        pos = raw.find(sig)
        while pos != -1:
            n = int.from_bytes(raw[pos + len_at: pos + len_at + 2], "little")
            if bytes(raw[pos + name_at: pos + name_at + n]) == b"good/big.bin":
                raw[pos + size_at: pos + size_at + 4] = (10).to_bytes(4, "little")
            pos = raw.find(sig, pos + 4)
    return bytes(raw)


# --- the HTTP server ------------------------------------------------------------------------------

@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    location: str = ""
    #: Send no Content-Length (the body ends when the connection closes).
    no_length: bool = False
    #: Answer only after the server is stopped (a download that hangs).
    hang: bool = False
    content_type: str = "application/octet-stream"


class FileServer:
    """Serves `routes` (path → Route) on 127.0.0.1; `requests` lists the paths asked for."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[str] = []
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                route = server.routes.get(self.path)
                if route is None:
                    self.send_error(404)
                    return
                if route.hang:
                    server._stop.wait(30)
                    return
                self.send_response(route.status)
                if route.location:
                    self.send_header("Location", route.location)
                self.send_header("Content-Type", route.content_type)
                if not route.no_length:
                    self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                try:
                    self.wfile.write(route.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)  # shutdown waits a poll

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def serve(self, path: str, body: bytes | str = b"", **kw: Any) -> str:
        self.routes[path] = Route(body=body.encode() if isinstance(body, str) else body, **kw)
        return self.url(path)

    def start(self) -> FileServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)
