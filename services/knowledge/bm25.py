"""How a keyword search asks FTS5 for the best chunks without scoring every chunk that shares a word.

FTS5 computes BM25 for every row its MATCH returns, and an OR of a Chinese query's characters matches
nearly every chunk: at 10,000 chunks that was 20-30 ms of the search. Most of those rows share only
frequent terms with the query, and a frequent term's BM25 weight is small: FTS5 scores a term at most
`idf * (k1 + 1)`, idf = ln((N - n + 0.5) / (n + 0.5)) for a term in n of N rows (1e-6 when that is not
positive). So (the MaxScore idea): split the query into rare terms R and frequent terms F; ask for the
best chunks among those holding some rare term, scored on all terms (`R AND (F OR <every row>)`: each
term is a phrase once, so no score counts twice); a chunk holding no rare term scores at most
`bound(F)`. When the last of the `limit` chunks found scores above that bound, they are exactly the
`limit` best of the whole scope, in the same order; otherwise the search asks again with every term.
The ranking is the plain BM25 over all terms either way; only the work differs.

The `every` column holds the token `1` in every row, weighted 0 in the score (it only lengthens each row
by one token, the same for all), so `every : 1` matches all rows and adds nothing.

Two more savings leave the ranking as it was. A term in at least half the rows has idf 1e-6, so it moves
no score by more than a few millionths, yet FTS5 reads its whole (long) list to score it: `weighed` leaves
it out of the query as long as `limit` rows hold a term that weighs (else all terms are asked again). And
the row count N is read from the table's "averages" record (FTS5 keeps it for bm25 itself), not counted:
counting read every row's entry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

#: FTS5's bm25() constants.
K1 = 1.2
#: A term in more than this share of the scope's chunks is "frequent" (10 %: a search asks for the top 5
#: when it is keyword-only, whose scores clear the bound of the terms above it; at 25 % the narrowed search
#: still scored 40 % of a 10,000-chunk Chinese scope; at 5 % the bound failed and all was asked again).
FREQUENT = 0.1
#: The score: column `terms` weighted 1, column `every` 0.
SCORE = "bm25({table}, 1.0, 0.0)"


def idf(rows: int, hits: int) -> float:
    """FTS5's idf of a term in `hits` of `rows` rows."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0 else 1e-6


def weighed(rows: int, terms: Sequence[str], df: Mapping[str, int]) -> list[str]:
    """The terms whose weight is more than FTS5's floor of 1e-6 (all of them when none is)."""
    kept = [t for t in terms if idf(rows, df.get(t, 0)) > 1e-6]
    return kept or list(terms)


def row_count(averages: bytes | None) -> int:
    """N, the table's row count: the first varint (SQLite's format) of FTS5's averages record."""
    value = 0
    for i, byte in enumerate((averages or b"")[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return value


def bound(rows: int, frequent: Sequence[str], df: Mapping[str, int]) -> float:
    """More than a chunk holding only the `frequent` terms can score."""
    return sum(idf(rows, df.get(t, 0)) for t in frequent) * (K1 + 1.0)


def rare_and_frequent(rows: int, terms: Sequence[str], df: Mapping[str, int]) -> tuple[list[str], list[str]]:
    """(rare, frequent) in query order; terms in no chunk are left out (they match nothing)."""
    rare = [t for t in terms if 0 < df.get(t, 0) <= rows * FREQUENT]
    frequent = [t for t in terms if df.get(t, 0) > rows * FREQUENT]
    return rare, frequent


def any_of(terms: Sequence[str]) -> str:
    """An FTS5 expression: any of the terms, in the `terms` column (terms are folded words without quotes)."""
    return "terms : (" + " OR ".join(f'"{t}"' for t in terms) + ")"


def narrowed(rare: Sequence[str], frequent: Sequence[str]) -> str:
    """Rows holding a rare term, scored on all terms."""
    return f"{any_of(rare)} AND ({any_of(frequent)} OR every : 1)"
