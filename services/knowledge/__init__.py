"""Knowledge base and long-term memory (D3, K1-K5), on Chroma.

How the modules fit:

- `text`: normal form (de-duplication), chunks of 600 runes with 60 overlap (langchain's recursive
  splitter, cutting at paragraph and sentence ends, Chinese punctuation included), search terms
  (rjieba word segmentation, Snowball stems, stop words).
- `store`: the Chroma record (embedded `PersistentClient` or a server through `HttpClient`), per-scope
  stamps, vectors; every failure becomes a clear `StoreError`. `changes` keeps the stamps between
  searches while Chroma's file is unchanged.
- `index`: BM25 keyword search in SQLite FTS5, one table per scope, in a file of the data directory
  (`keyword-index/`), a cache of the store checked against its per-scope stamps; `bm25` narrows a
  search to chunks holding a rare term when that provably changes nothing.
- `embedder`: the optional OpenAI-compatible embeddings endpoint, batched; failures fall back to keywords.
- `base`: one base (documents or memories) joining the three: add with de-duplication and limits,
  hybrid search, list, delete.
- `service`: `KnowledgeService`, built once by the composition root: scopes, size limits, both bases.
"""

from services.knowledge.base import Added, Hit
from services.knowledge.service import GLOBAL, KnowledgeService, check_scope
from services.knowledge.store import DocInfo, StoreError
from services.knowledge.text import CHUNK_OVERLAP, CHUNK_RUNES

__all__ = [
    "CHUNK_OVERLAP",
    "CHUNK_RUNES",
    "GLOBAL",
    "Added",
    "DocInfo",
    "Hit",
    "KnowledgeService",
    "StoreError",
    "check_scope",
]
