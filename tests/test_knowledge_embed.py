"""Hybrid retrieval against the scripted server's /v1/embeddings, and every way the embedder can fail."""

from __future__ import annotations

import logging
import socket
from dataclasses import replace

import pytest

from ania.fakes.openai_server import Dims, Fail, Stall
from core.settings import Settings
from services.knowledge import KnowledgeService
from services.retry import EMBEDDING

DOCS = {
    "wifi": "The office Wi-Fi network is called Ania-Guest and its password is printed on the fridge.",
    "lunch": "Lunch is served at noon in the canteen on the ground floor, vegetarian on Fridays.",
    "parking": "Visitors park in the north lot; the gate code is given at the front desk.",
}


@pytest.fixture
async def hybrid(scripted_llm, tmp_path):
    made: list[KnowledgeService] = []

    def make(**embedding) -> KnowledgeService:
        conf = {"base_url": scripted_llm.base_url, "model": "fake-embed", "timeout_sec": 1, **embedding}
        svc = KnowledgeService(Settings(embedding=conf), tmp_path / "data")
        made.append(svc)
        return svc

    yield make
    for svc in made:
        await svc.aclose()


async def fill(svc: KnowledgeService) -> None:
    for title, text in DOCS.items():
        added = await svc.add_document("f:u1", title, text)
        assert added.vectors


async def test_vectors_are_stored_batched_and_cosine_adds_to_the_keyword_score(hybrid, scripted_llm):
    svc = hybrid(batch_size=2)
    long_doc = "\n\n".join(f"Paragraph {i} about the quarterly budget review and spending." * 6 for i in range(8))
    added = await svc.add_document("f:u1", "budget", long_doc)
    assert added.vectors and added.doc.chunks > 2
    sizes = [len(batch) for batch in scripted_llm.embedding_inputs]
    assert max(sizes) == 2 and sum(sizes) == added.doc.chunks
    await fill(svc)
    hits = await svc.search("f:u1", "wifi password", 3)
    assert hits[0].chunk.title == "wifi"
    best = hits[0]
    assert best.cosine is not None and best.cosine > 0.2
    assert best.score == pytest.approx(1.0 + best.cosine)  # best keyword score scaled to 1, plus cosine


async def test_the_vector_side_finds_what_keywords_miss(hybrid):
    svc = hybrid()
    await fill(svc)
    # "canteen" and "floor" are in the lunch text; "ground" too. Stop words aside, only the vector side
    # sees character pairs: a typo'd query shares none of the keyword terms.
    hits = await svc.search("f:u1", "canteeen grounnd flooor lunchh", 3)
    assert hits and hits[0].chunk.title == "lunch" and hits[0].keyword == 0.0 and hits[0].cosine


@pytest.mark.parametrize("failure", [Fail(500), Dims(3), Stall(3)], ids=["http-500", "wrong-dimensions", "hang"])
async def test_a_failing_embedder_leaves_a_keyword_answer_and_one_log_line(hybrid, scripted_llm, caplog, failure):
    svc = hybrid()
    await fill(svc)  # vectors of 64 numbers are stored
    scripted_llm.script_embeddings([failure])
    with caplog.at_level(logging.WARNING, logger="services.knowledge"):
        hits = await svc.search("f:u1", "parking gate code", 3)
        again = await svc.search("f:u1", "parking visitors", 3)
    assert hits[0].chunk.title == "parking" and hits[0].cosine is None
    assert again[0].chunk.title == "parking" and again[0].cosine is None  # backing off: not asked again
    lines = [r.getMessage() for r in caplog.records if "embedding service" in r.getMessage()]
    assert len(lines) == 1 and "searching by keywords only" in lines[0]


async def test_a_document_added_while_the_embedder_fails_is_still_found(hybrid, scripted_llm):
    svc = hybrid()
    scripted_llm.script_embeddings([Fail(500)])
    added = await svc.add_document("f:u1", "wifi", DOCS["wifi"])
    assert not added.vectors
    assert (await svc.search("f:u1", "wifi password", 3))[0].chunk.doc_id == added.doc.id


async def test_the_embedder_is_asked_again_after_the_back_off(hybrid, scripted_llm, caplog):
    svc = hybrid()
    svc.embedder.retry_after_sec = 0.0
    await fill(svc)
    scripted_llm.script_embeddings([Fail(500)])
    with caplog.at_level(logging.WARNING, logger="services.knowledge"):
        assert (await svc.search("f:u1", "lunch canteen", 3))[0].cosine is None
        assert (await svc.search("f:u1", "lunch canteen", 3))[0].cosine is not None
    assert any("answers again" in r.getMessage() for r in caplog.records)


async def test_memory_shares_the_embedder(hybrid, scripted_llm):
    svc = hybrid()
    await svc.save_memory("f:u1", "Carol is allergic to peanuts")
    before = len(scripted_llm.embedding_inputs)
    hits = await svc.search_memory("f:u1", "peanuts allergy Carol", 3)
    assert hits[0].cosine is not None and len(scripted_llm.embedding_inputs) == before + 1
    assert svc.memory.embedder is svc.kb.embedder


async def test_no_embedding_service_means_keyword_only_and_no_request(scripted_llm, tmp_path):
    svc = KnowledgeService(Settings(), tmp_path / "data")
    try:
        added = await svc.add_document("f:u1", "wifi", DOCS["wifi"])
        hits = await svc.search("f:u1", "wifi", 3)
        assert not added.vectors and hits[0].cosine is None and scripted_llm.embedding_inputs == []
    finally:
        await svc.aclose()


async def test_vectors_of_another_size_after_a_restart_fall_back_to_keywords(hybrid, scripted_llm, caplog):
    await fill(hybrid())
    restarted = hybrid()  # knows no vector size yet; the stored vectors have 64 numbers
    scripted_llm.script_embeddings([Dims(3)])
    with caplog.at_level(logging.WARNING, logger="services.knowledge"):
        hits = await restarted.search("f:u1", "parking gate", 3)
    assert hits[0].chunk.title == "parking" and hits[0].cosine is None
    assert any("searching by keywords only" in r.getMessage() for r in caplog.records)


async def test_a_refused_connection_is_tried_once_more_then_backed_off(scripted_llm, tmp_path, caplog):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    svc = KnowledgeService(Settings(embedding={"base_url": f"http://127.0.0.1:{port}/v1", "model": "m"}),
                           tmp_path / "data")
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    svc.embedder.retry = replace(EMBEDDING, sleep=sleep)
    try:
        with caplog.at_level(logging.WARNING, logger="services.knowledge"):
            added = await svc.add_document("f:u1", "wifi", DOCS["wifi"])
            assert (await svc.search("f:u1", "wifi password", 3))[0].cosine is None
        assert not added.vectors and waits == [0.5]  # one more try, then no request while backing off
        assert [r.getMessage() for r in caplog.records if "ConnectError" in r.getMessage()]
    finally:
        await svc.aclose()


async def test_an_error_answer_is_not_tried_again(hybrid, scripted_llm):
    svc = hybrid()
    await fill(svc)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    svc.embedder.retry = replace(svc.embedder.retry, sleep=sleep)
    before = len(scripted_llm.embedding_inputs)
    scripted_llm.script_embeddings([Fail(500)])
    assert (await svc.search("f:u1", "parking gate code", 3))[0].cosine is None
    assert waits == [] and len(scripted_llm.embedding_inputs) == before + 1
