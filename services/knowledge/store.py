"""The Chroma store (D3): the record of every chunk, its metadata, the per-scope stamps and the vectors.

Embedded (`PersistentClient` at `<data dir>/chroma`) by default, a Chroma server (`HttpClient`) when
`knowledge.chroma_url` is set; nothing else changes. Collections per base (`kb`, `memory`):

- `<base>_chunks`: text and metadata of every chunk. Chroma needs a vector per record, so each gets a
  2-number placeholder (never searched); Chroma's own embedding function is never used (it downloads a
  model), so no call here passes text without vectors. The text is the metadata field `text`, not Chroma's
  document: Chroma indexes every document for its own full-text filter (trigrams), which nothing here
  queries (the keyword index does the searching) and which made a quarter of a Chinese add's write and over
  a third of an English one's at 10,000 chunks (`bench_knowledge_scale`). A chunk stored by an earlier
  version has its text as the document: readers take either. It also holds one record per scope, `stamp|<scope>`
  (no `scope` field, so no query for chunks meets it), whose stamp changes on every write: the keyword index
  rebuilds a scope whose stamp moved. A document's chunks and the new stamp go in one `upsert`, one Chroma
  write, as plain Chroma would make for the chunks alone: each Chroma write costs some 50 ms however small,
  and a second one per document (a separate stamps collection, as before) made ingest 1.25x plain Chroma.
- `<base>_vec_<key>_<scope hash>`: the embedder's vectors, one collection per endpoint and model (another
  model's vectors are never compared) and per scope (Chroma's filtered vector query is linear in the
  filtered set: 70 ms at 14,000 chunks, against 3 ms unfiltered), cosine space.

Every call is synchronous (run it in a thread) and serialized; a Chroma failure becomes a `StoreError`
with a sentence a person can act on, and a deleted folder is noticed before it swallows writes.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import uuid
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from core.errors import ToolError
from services.knowledge.changes import StampCache
from services.knowledge.index import Chunk
from services.knowledge.server import ChromaServer, redact

log = logging.getLogger(__name__)

T = TypeVar("T")
BATCH = 1000
STORE_GONE = ("The knowledge store folder {path} was deleted while the bot was running, and what it held is gone. "
              "The next call starts a new, empty store there.")
STORE_BROKEN = ("The knowledge store cannot be used ({detail}). It may be damaged or unreachable: an operator "
                "should check {where} (stop the bot, move a damaged folder away, restart). Nothing was changed.")
SERVER_BROKEN = ("The knowledge store cannot be used ({detail}). The Chroma server at {where} is down or unreachable: "
                 "an operator should check that it runs. Nothing was changed; try again once it is back.")


class StoreError(ToolError):
    """The store failed; the text says what to do."""


@dataclass(frozen=True)
class DocInfo:
    id: str
    title: str
    scope: str
    chunks: int
    runes: int
    added: int


def placeholder(chunk_id: str) -> list[float]:
    angle = zlib.crc32(chunk_id.encode()) / 2**32 * 2 * math.pi
    return [math.cos(angle), math.sin(angle)]


def _info(meta: Mapping[str, Any], scope: str) -> DocInfo:
    """A document's description from its first chunk's metadata."""
    return DocInfo(id=str(meta["doc"]), title=str(meta.get("title", "")), scope=scope,
                   chunks=int(meta.get("chunks", 1)), runes=int(meta.get("runes", 0)), added=int(meta.get("added", 0)))


def _stamp_id(scope: str) -> str:
    return f"stamp|{scope}"


def _stamp_record(scope: str, stamp: str) -> dict[str, list[Any]]:
    sid = _stamp_id(scope)
    return {"ids": [sid], "embeddings": [placeholder(sid)], "metadatas": [{"stamp": stamp, "stamp_of": scope}]}


def _text(document: str | None, meta: Mapping[str, Any] | None) -> str:
    """A chunk's text: its `text` field, or the document an earlier version stored it as."""
    text = (meta or {}).get("text")
    return str(text) if text is not None else document or ""


class ChromaStore:
    def __init__(self, path: Path, url: str = "") -> None:
        self.path = path
        self.url = url
        self._client: Any = None
        self._collections: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._stamp_cache = StampCache(path / "chroma.sqlite3")

    @property
    def where(self) -> str:
        """The folder, or the server's URL without its credentials (what errors and logs show)."""
        return redact(self.url) if self.url else str(self.path)

    def run(self, fn: Callable[[], T]) -> T:
        """Run `fn` against the open store; every Chroma failure comes out as a StoreError."""
        with self._lock:
            self._check_folder()
            try:
                return fn()
            except ToolError:  # a StoreError, or a chroma_url that is not an address
                raise
            except Exception as e:
                detail = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                log.warning("knowledge store at %s failed: %s", self.where, detail)  # one line: no traceback for
                log.debug("knowledge store failure", exc_info=True)                 # an operator's terminal
                if self.url:  # the server may come back (or be another one): the next call asks it afresh
                    self._client = None
                    self._collections.clear()
                broken = SERVER_BROKEN if self.url else STORE_BROKEN
                raise StoreError(broken.format(detail=detail, where=self.where)) from None

    def _check_folder(self) -> None:
        if self.url or self._client is None or (self.path / "chroma.sqlite3").exists():
            return
        self._reset()
        raise StoreError(STORE_GONE.format(path=self.path))

    def _reset(self) -> None:
        if self._client is not None:
            try:
                self._client.clear_system_cache()
            except Exception:
                log.debug("clearing the Chroma client cache failed", exc_info=True)
        self._client = None
        self._collections.clear()
        self._stamp_cache.clear()

    def _open(self) -> Any:
        if self._client is None:
            import chromadb
            from chromadb.config import Settings as ChromaSettings

            settings = ChromaSettings(anonymized_telemetry=False)
            if self.url:
                self._client = ChromaServer.parse(self.url).client(settings)
            else:
                self.path.mkdir(parents=True, exist_ok=True)
                self._client = chromadb.PersistentClient(path=str(self.path), settings=settings)
        return self._client

    def collection(self, name: str, cosine: bool = False, create: bool = True) -> Any:
        """The collection (made when missing); with `create=False`, None when it does not exist."""
        col = self._collections.get(name)
        if col is None:
            if not create:
                from chromadb.errors import NotFoundError

                try:
                    col = self._open().get_collection(name, embedding_function=None)
                except NotFoundError:
                    return None
            else:
                config: Any = {"hnsw": {"space": "cosine"}} if cosine else None
                col = self._open().get_or_create_collection(name, configuration=config, embedding_function=None)
            self._collections[name] = col
        return col

    def close(self) -> None:
        with self._lock:
            self._client = None
            self._collections.clear()
            self._stamp_cache.clear()

    # --- stamps ---------------------------------------------------------------------------------
    def stamps(self, base: str, scopes: Sequence[str]) -> dict[str, str | None]:
        """Each scope's stamp; None for a scope never written (or written before stamps lived here). Read
        again only when Chroma's file changed (services/knowledge/changes.py)."""
        version = None if self.url else self._stamp_cache.version()
        found = self._stamp_cache.get(version, base, scopes)
        if found is None:
            found = self._stamps(base, scopes)
            self._stamp_cache.put(version, base, found)
        return found

    def _stamps(self, base: str, scopes: Sequence[str]) -> dict[str, str | None]:
        got = self.collection(f"{base}_chunks").get(ids=[_stamp_id(s) for s in scopes], include=["metadatas"])
        found = {i: (m or {}).get("stamp") for i, m in zip(got["ids"], got["metadatas"] or [], strict=False)}
        return {s: found.get(_stamp_id(s)) for s in scopes}

    def new_stamp(self, base: str, scope: str) -> str:
        stamp = uuid.uuid4().hex
        self.collection(f"{base}_chunks").upsert(**_stamp_record(scope, stamp))
        return stamp

    # --- chunks ---------------------------------------------------------------------------------
    def add_chunks(self, base: str, chunks: Sequence[Chunk], meta: dict[str, Any]) -> str:
        """Store the chunks (of one scope) and move the scope's stamp in the same write; the new stamp. The
        document's `meta` (digest, sizes, date) goes on its first chunk only, where every reader looks: on
        every chunk it made Chroma's write 1.15x plain Chroma's, on the first 1.01x (`bench_knowledge_scale`)."""
        col = self.collection(f"{base}_chunks")
        stamp = uuid.uuid4().hex
        for start in range(0, len(chunks), BATCH):
            part = chunks[start : start + BATCH]
            record: dict[str, list[Any]] = {
                "ids": [c.id for c in part], "embeddings": [placeholder(c.id) for c in part],
                "metadatas": [{**(meta if c.pos == 0 else {}), "scope": c.scope, "doc": c.doc_id, "title": c.title,
                               "pos": c.pos, "text": c.text} for c in part]}
            if start + BATCH >= len(chunks):  # the last part carries the stamp: it moves once all is stored
                for key, values in _stamp_record(part[0].scope, stamp).items():
                    record[key] += values
            col.upsert(**record)
        return stamp

    def first(self, base: str, scope: str, doc_id: str, digest: str) -> tuple[str | None, DocInfo | None]:
        """The scope's stamp, and the document `doc_id` when it is stored with this digest: one read by ids
        (a document's id follows from its scope and digest), the cheapest Chroma read; a filtered read
        costs several times more, at every add."""
        version = None if self.url else self._stamp_cache.version()
        got = self.collection(f"{base}_chunks").get(ids=[_stamp_id(scope), f"{doc_id}#0"], include=["metadatas"])
        found = {i: m or {} for i, m in zip(got["ids"], got["metadatas"] or [], strict=False)}
        stamp, head = found.get(_stamp_id(scope), {}).get("stamp"), found.get(f"{doc_id}#0")
        self._stamp_cache.put(version, base, {scope: stamp})  # the add's next look at the stamp needs no read
        return stamp, (_info(head, scope) if head is not None and head.get("hash") == digest else None)

    def count_docs(self, base: str, scope: str) -> int:
        """How many documents the scope holds (ids only), when the keyword index cannot say."""
        got = self.collection(f"{base}_chunks").get(where={"$and": [{"scope": scope}, {"pos": 0}]}, include=[])
        return len(got["ids"])

    def docs(self, base: str, scope: str) -> list[DocInfo]:
        got = self.collection(f"{base}_chunks").get(where={"$and": [{"scope": scope}, {"pos": 0}]},
                                                    include=["metadatas"])
        return sorted((_info(m, scope) for m in got["metadatas"] or []), key=lambda d: (-d.added, d.id))

    def scopes(self, base: str) -> dict[str, int]:
        """Every scope holding documents of the base, with their number."""
        got = self.collection(f"{base}_chunks").get(where={"pos": 0}, include=["metadatas"])
        out: dict[str, int] = {}
        for m in got["metadatas"] or []:
            out[str(m["scope"])] = out.get(str(m["scope"]), 0) + 1
        return out

    def texts(self, base: str, doc_ids: Sequence[str]) -> dict[str, str]:
        """The first chunk's text of each document (a memory's whole text)."""
        if not doc_ids:
            return {}
        got = self.collection(f"{base}_chunks").get(ids=[f"{d}#0" for d in doc_ids],
                                                    include=["documents", "metadatas"])
        return {i.rsplit("#", 1)[0]: _text(d, m)
                for i, d, m in zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=False)}

    def doc(self, base: str, doc_id: str) -> tuple[DocInfo, list[str]] | None:
        got = self.collection(f"{base}_chunks").get(where={"doc": doc_id}, include=["metadatas"])
        if not got["ids"]:
            return None
        m = next((m for m in got["metadatas"] if m.get("pos") == 0), got["metadatas"][0])
        return _info({**m, "doc": doc_id}, str(m["scope"])), list(got["ids"])

    def delete(self, base: str, scope: str, ids: Sequence[str], vector_key: str | None) -> None:
        self.collection(f"{base}_chunks").delete(ids=list(ids))
        col = self._vectors(base, vector_key, scope, create=False) if vector_key else None
        if col is not None:
            col.delete(ids=list(ids))

    def load_scope(self, base: str, scope: str) -> list[Chunk]:
        got = self.collection(f"{base}_chunks").get(where={"scope": scope}, include=["documents", "metadatas"])
        return [Chunk(id=i, doc_id=str(m["doc"]), title=str(m.get("title", "")), pos=int(m.get("pos", 0)),
                      scope=scope, text=_text(d, m))
                for i, d, m in zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=False)]

    # --- vectors --------------------------------------------------------------------------------
    def _vectors(self, base: str, key: str, scope: str, create: bool = True) -> Any:
        name = f"{base}_vec_{key}_{hashlib.sha1(scope.encode(), usedforsecurity=False).hexdigest()[:12]}"
        return self.collection(name, cosine=True, create=create)

    def add_vectors(self, base: str, key: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Vectors of chunks of one scope."""
        col = self._vectors(base, key, chunks[0].scope)
        for start in range(0, len(chunks), BATCH):
            part = chunks[start : start + BATCH]
            col.upsert(ids=[c.id for c in part], embeddings=vectors[start : start + len(part)],
                       metadatas=[{"doc": c.doc_id} for c in part])

    def nearest(self, base: str, key: str, vector: np.ndarray, scopes: Sequence[str],
                n: int) -> list[tuple[str, str, float]]:
        """(chunk id, scope, cosine) of the `n` nearest chunks of each scope."""
        out = []
        for scope in scopes:
            col = self._vectors(base, key, scope, create=False)
            if col is None or col.count() == 0:
                continue
            got = col.query(query_embeddings=[vector], n_results=n, include=["distances"])
            out += [(i, scope, 1.0 - float(d)) for i, d in zip(got["ids"][0], got["distances"][0], strict=False)]
        return out

    def vectors(self, base: str, key: str, scope: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        col = self._vectors(base, key, scope, create=False)
        if col is None:
            return {}
        got = col.get(ids=list(ids), include=["embeddings"])
        embeddings = got["embeddings"] if got["embeddings"] is not None else []
        return {i: np.asarray(e, dtype=np.float32) for i, e in zip(got["ids"], embeddings, strict=False)}
