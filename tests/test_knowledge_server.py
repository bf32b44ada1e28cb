"""`knowledge.chroma_url`: the same service against a real Chroma server (`chroma run`, on 127.0.0.1)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from core.errors import ToolError
from core.settings import Settings
from services.knowledge import GLOBAL, KnowledgeService
from services.knowledge.service import INDEX_DIR

CHROMA = shutil.which("chroma") or str(Path(sys.executable).with_name("chroma"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path):
    if not Path(CHROMA).exists():
        pytest.skip("the chroma command (from the chromadb package) is not installed")
    port = free_port()
    proc = subprocess.Popen([CHROMA, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "chroma server did not start"
        time.sleep(0.1)
    yield url, proc
    proc.terminate()
    proc.wait(10)


async def test_two_bots_share_a_chroma_server_and_a_stopped_server_is_a_clear_error(chroma_server, tmp_path):
    url, proc = chroma_server
    one = KnowledgeService(Settings(knowledge={"chroma_url": url}), tmp_path / "one")
    two = KnowledgeService(Settings(knowledge={"chroma_url": url}), tmp_path / "two")
    try:
        await one.add_document(GLOBAL, "群规", "本群禁止发广告，违反三次移出群聊。")
        assert "移出群聊" in (await two.search("g:1", "发广告", 5))[0].chunk.text
        await two.add_document(GLOBAL, "FAQ", "Reset your password on the login page.")
        assert (await one.search("g:1", "password reset", 5))[0].chunk.title == "FAQ"  # the stamp moved
        assert not (tmp_path / "one" / "chroma").exists()  # no embedded store was created
        assert sorted(p.name for p in (tmp_path / "one" / INDEX_DIR).glob("*.sqlite3")) == ["kb.sqlite3", "memory.sqlite3"]
        proc.terminate()
        proc.wait(10)
        with pytest.raises(ToolError, match=rf"The knowledge store cannot be used \(.*\)\. .*check {url}"):
            await one.search("g:1", "password", 5)
    finally:
        await one.aclose()
        await two.aclose()
