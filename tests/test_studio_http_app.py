"""ania/studio_http.py without a server: `POST /ania/threads/sync` takes only a Studio thread's UUID (a session
key, a body that is no JSON object, or no thread_id is answered 422 before any checkpoint is read), and the
guard takes the in-process client's Host `api` only from the in-process client.
(The guard against live pages: tests/test_studio_guard.py.)"""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from ania import studio_http, studio_threads
from ania.studio_http import IN_PROCESS, OriginGuard, allowed_host


@pytest.fixture
def client(monkeypatch) -> tuple[TestClient, list[str]]:
    synced: list[str] = []

    async def sync_values(thread: str) -> bool:
        synced.append(thread)
        return True

    monkeypatch.setattr(studio_threads, "sync_values", sync_values)
    app = Starlette(routes=[Route("/ania/threads/sync", studio_http.sync_route, methods=["POST"])])  # the route alone
    return TestClient(app), synced


@pytest.mark.parametrize("body", [b"", b"{}", b"not json", b"[1]", b'"g:123"', b"null",
                                  b'{"thread_id": "g:123"}', b'{"thread_id": null}', b'{"thread_id": 7}'])
def test_anything_but_a_thread_uuid_is_refused_unread(client, body: bytes) -> None:
    http, synced = client
    answer = http.post("/ania/threads/sync", content=body)
    assert answer.status_code == 422 and "UUID" in answer.json()["detail"]
    assert synced == []


def test_a_thread_uuid_is_synced(client) -> None:
    http, synced = client
    thread = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    answer = http.post("/ania/threads/sync", json={"thread_id": thread.upper()})
    assert answer.status_code == 200 and answer.json() == {"thread_id": thread, "synced": True}
    assert synced == [thread]


def guarded(base_url: str) -> TestClient:
    """A trivial app behind the guard (built without langgraph-api's config: no extra origins)."""
    inner = Starlette(routes=[Route("/ok", lambda request: JSONResponse({"ok": True}))])
    guard = object.__new__(OriginGuard)
    guard.app, guard.extra = inner, ()
    return TestClient(guard, base_url=base_url)


def test_the_in_process_host_is_taken_only_from_the_in_process_client() -> None:
    assert allowed_host("api", in_process=True) and not allowed_host("api")
    assert allowed_host("127.0.0.1:2024") and allowed_host("localhost:2024") and not allowed_host("evil.example")
    assert guarded(f"http://{IN_PROCESS}").get("/ok").status_code == 200  # langgraph's get_client(): scope server "api"
    network = guarded("http://127.0.0.1:2024")  # a socket's scope: the server's address
    assert network.get("/ok").status_code == 200
    refused = network.get("/ok", headers={"Host": "api:2024"})  # a page at http://api:2024 rebound to 127.0.0.1
    assert refused.status_code == 403 and "'api:2024' is not this machine's address" in refused.json()["detail"]
