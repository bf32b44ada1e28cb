"""`POST /ania/threads/sync` (ania/studio_http.py) takes only a Studio thread's UUID: a session key, a body
that is no JSON object, or no thread_id is answered 422 before any checkpoint is read."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from ania import studio_http, studio_threads


@pytest.fixture
def client(monkeypatch) -> tuple[TestClient, list[str]]:
    synced: list[str] = []

    async def sync_values(thread: str) -> bool:
        synced.append(thread)
        return True

    monkeypatch.setattr(studio_threads, "sync_values", sync_values)
    app = Starlette(routes=[Route("/ania/threads/sync", studio_http._sync, methods=["POST"])])  # the route alone
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
