"""A tiny HTTP server on 127.0.0.1 with scripted routes: images for load_images and meme, a Jina-like
search and reader, a meme API, and routes that fail (500) or hang. Runs in a thread; every request is kept."""

from __future__ import annotations

import base64
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

#: A valid 1x1 PNG (the smallest real image the sniffers accept).
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    content_type: str = "text/plain; charset=utf-8"
    delay: float = 0.0
    location: str = ""  # a redirect's target
    encoding: str = ""  # Content-Encoding of `body` (already encoded)


class WebFake:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.prefixes: dict[str, Route] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.requests.append((self.path, dict(self.headers.items())))
                route = fake.route(self.path)
                if route.delay:
                    time.sleep(route.delay)
                try:
                    self.send_response(route.status)
                    self.send_header("Content-Type", route.content_type)
                    if route.location:
                        self.send_header("Location", route.location)
                    if route.encoding:
                        self.send_header("Content-Encoding", route.encoding)
                    self.send_header("Content-Length", str(len(route.body)))
                    self.end_headers()
                    self.wfile.write(route.body)
                except OSError:
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll: shutdown() waits for it (0.5 s by default, in every test's teardown).
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    def route(self, path: str) -> Route:
        if path in self.routes:
            return self.routes[path]
        bare = urlsplit(path).path
        if bare in self.routes:
            return self.routes[bare]
        for prefix, route in sorted(self.prefixes.items(), key=lambda kv: -len(kv[0])):
            if path.startswith(prefix):
                return route
        return Route(b"not found", 404)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base + path

    def start(self) -> WebFake:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
