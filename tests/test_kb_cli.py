"""`ania kb` as an operator runs it: real subprocesses on one data folder, then the bot reading it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.settings import Settings
from services.knowledge import KnowledgeService

# Several `ania kb` processes in a row, each importing Chroma: on parallel workers this outlasts the default 60 s.
pytestmark = pytest.mark.timeout(180)
ROOT = Path(__file__).resolve().parent.parent


def kb(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    (tmp_path / "config").mkdir(exist_ok=True)  # a named config dir must exist (`ania kb` checks, like chat)
    env.update(ANIA_CONFIG_DIR=str(tmp_path / "config"), ANIA_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ania.cli", "kb", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)


async def test_add_list_search_delete_and_the_bot_sees_the_global_base(tmp_path):
    (tmp_path / "rules.md").write_text("# 群规\n\n本群禁止发广告。违反三次的成员会被移出群聊。\n", encoding="utf-8")
    (tmp_path / "faq.txt").write_text("To reset your password, click Forgot password on the login page.\n")
    added = kb(tmp_path, "add", "rules.md", "faq.txt")
    assert added.returncode == 0, added.stderr
    lines = added.stdout.splitlines()
    assert lines[0].startswith('rules.md: Stored "rules.md" as d-') and lines[0].endswith("in global: 1 passage, 29 characters.")
    assert lines[1].startswith('faq.txt: Stored "faq.txt" as d-')
    again = kb(tmp_path, "add", "faq.txt", "--title", "FAQ")
    assert again.returncode == 0 and "Stored \"FAQ\"" in again.stdout  # another title: another document
    listed = kb(tmp_path, "list")
    assert listed.stdout.startswith("Documents in global (3 of 3, newest first):")
    found = kb(tmp_path, "search", "发广告 怎么处理")
    assert "移出群聊" in found.stdout and found.stdout.startswith("1 passage, best first:")
    doc_id = lines[1].split(" as ")[1].split(" ")[0]
    deleted = kb(tmp_path, "delete", doc_id)
    assert deleted.returncode == 0 and deleted.stdout.startswith(f'Deleted {doc_id} "faq.txt" from global')

    bot = KnowledgeService(Settings(), tmp_path / "data")  # the bot, started after the operator's edits
    try:
        hits = await bot.search("g:any", "forgot password login", 5)
        assert [h.chunk.title for h in hits] == ["FAQ"]
    finally:
        await bot.aclose()


def test_bad_files_and_arguments_are_one_line_each_and_the_rest_is_added(tmp_path):
    (tmp_path / "good.md").write_text("good text about apples\n")
    (tmp_path / "empty.txt").write_text("   \n")
    (tmp_path / "binary.bin").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "huge.txt").write_text("x" * 1_000_001)
    done = kb(tmp_path, "add", "missing.txt", "empty.txt", "binary.bin", "latin1.txt", "huge.txt", "good.md")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "ania: missing.txt: cannot read it (No such file or directory)",
        "ania: empty.txt: The document is empty: nothing was stored.",
        "ania: binary.bin: not a text file (text and Markdown only)",
        "ania: latin1.txt: not UTF-8 text (text and Markdown only)",
        "ania: huge.txt: The document is 1,000,001 characters long; the limit is 1,000,000 "
        "(knowledge.max_doc_runes). Nothing was stored: split it and add the parts with their own titles.",
    ]
    assert done.stdout.startswith('good.md: Stored "good.md"')
    bad_scope = kb(tmp_path, "add", "good.md", "--scope", "../etc")
    assert bad_scope.returncode == 1
    assert bad_scope.stderr == "ania: Invalid scope '../etc': use global, g:<group id> or f:<user id>.\n"
    two_titles = kb(tmp_path, "add", "good.md", "empty.txt", "--title", "T")
    assert two_titles.stderr == "ania: --title names one document: give exactly one FILE with it\n"
    assert "Traceback" not in done.stderr + bad_scope.stderr + two_titles.stderr


def test_a_session_scope_from_the_command_line(tmp_path):
    (tmp_path / "notes.md").write_text("The club meets on Tuesdays in room 4.\n")
    assert kb(tmp_path, "add", "notes.md", "--scope", "g:club").returncode == 0
    assert "room 4" in kb(tmp_path, "search", "club meets", "--scope", "g:club").stdout
    assert kb(tmp_path, "search", "club meets", "--scope", "g:other").stdout == "No match.\n"
