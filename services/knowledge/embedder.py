"""The optional embedder (K3, K5): an OpenAI-compatible `/v1/embeddings` endpoint, shared by the knowledge
base and long-term memory.

Nothing is ever downloaded: with no `embedding.base_url`/`embedding.model` there are no vectors and search
is keyword-only. When the endpoint fails (an HTTP error, a hang past `embedding.timeout_sec`, vectors of
the wrong shape) the caller gets None, one warning goes to the log, and the endpoint is left alone for
`RETRY_AFTER_SEC` so a dead service does not slow every search down. Before that, a batch whose connection
failed (refused, reset, closed before the answer: not a timeout, not an error answer) is sent once more
(`self.retry`, services/retry.py): a pooled connection the server had already closed is no outage.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Sequence
from functools import partial

import httpx
import numpy as np

from core.settings import EmbeddingSettings
from services.retry import EMBEDDING, RetryPolicy

log = logging.getLogger(__name__)

RETRY_AFTER_SEC = 60.0


class EmbeddingFailed(Exception):
    """The endpoint's answer cannot be used; the message says why (it goes to the log)."""


def _connection_failed(error: BaseException) -> bool:
    """The request or its answer was lost on the way; a timeout is not retried (it already took its time)."""
    return isinstance(error, httpx.TransportError) and not isinstance(error, httpx.TimeoutException)


class Embedder:
    def __init__(self, settings: EmbeddingSettings, *, retry_after_sec: float = RETRY_AFTER_SEC,
                 retry: RetryPolicy = EMBEDDING) -> None:
        self._settings = settings
        #: Seconds without calls after a failure (searching by keywords meanwhile); a test may set 0.
        self.retry_after_sec = retry_after_sec
        #: How a batch whose connection failed is tried again (a seam: tests give it a sleep that returns at once).
        self.retry = retry
        self._client: httpx.AsyncClient | None = None
        self._down_until = 0.0
        self._failing = False
        #: The vector size the endpoint answered with first; a later answer of another size is a failure.
        self.dim: int | None = None

    @property
    def enabled(self) -> bool:
        return bool(self._settings.base_url and self._settings.model)

    @property
    def key(self) -> str:
        """Names the vector space (endpoint and model): vectors of another model are never compared."""
        raw = f"{self._settings.base_url.rstrip('/')}|{self._settings.model}"
        return hashlib.sha1(raw.encode(), usedforsecurity=False).hexdigest()[:10]

    def available(self) -> bool:
        return self.enabled and time.monotonic() >= self._down_until

    async def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """Unit-length float32 rows, one per text; None when there is no service or it failed."""
        if not texts or not self.available():
            return None
        try:
            rows: list[np.ndarray] = []
            size = self._settings.batch_size
            for start in range(0, len(texts), size):
                batch = texts[start : start + size]
                rows.append(await self.retry.call(partial(self._batch, batch), _connection_failed))
        except (httpx.HTTPError, EmbeddingFailed, ValueError) as e:
            self.reject(f"{type(e).__name__}: {e or 'timeout'}")
            return None
        if self._failing:
            self._failing = False
            log.warning("embedding service %s answers again; searching by keywords and vectors",
                        self._settings.base_url)
        return np.vstack(rows)

    def reject(self, reason: str) -> None:
        """The answer cannot be used (also when the store finds the vectors unfit): back off, log once."""
        self._down_until = time.monotonic() + self.retry_after_sec
        if not self._failing:
            self._failing = True
            log.warning("embedding service %s failed (%s); searching by keywords only, retrying in %g s",
                        self._settings.base_url, reason, self.retry_after_sec)

    async def _batch(self, texts: Sequence[str]) -> np.ndarray:
        headers = {"Authorization": f"Bearer {self._settings.api_key}"} if self._settings.api_key else {}
        response = await self._http().post(
            f"{self._settings.base_url.rstrip('/')}/embeddings",
            json={"model": self._settings.model, "input": list(texts), "encoding_format": "float"},
            headers=headers,
        )
        response.raise_for_status()
        data = response.json().get("data")
        if not isinstance(data, list) or len(data) != len(texts):
            raise EmbeddingFailed(f"expected {len(texts)} embeddings, got {len(data) if isinstance(data, list) else 0}")
        vectors = [item.get("embedding") for item in sorted(data, key=lambda d: d.get("index", 0))]
        dims = {len(v) if isinstance(v, list) else -1 for v in vectors}
        if len(dims) != 1 or (dim := dims.pop()) < 1:
            raise EmbeddingFailed("embeddings of different or no lengths")
        if self.dim is not None and dim != self.dim:
            raise EmbeddingFailed(f"{dim}-dimensional vectors, expected {self.dim}")
        matrix = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1)
        if not all(math.isfinite(n) and n > 0 for n in norms):
            raise EmbeddingFailed("zero or non-finite vectors")
        self.dim = dim
        unit: np.ndarray = matrix / norms[:, None]
        return unit

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._settings.timeout_sec, trust_env=False)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
