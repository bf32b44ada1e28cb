"""Text for retrieval: the normal form used for de-duplication, chunks (K2), and the search terms of a text.

Chinese has no spaces, so a whitespace tokenizer finds nothing in it. Three analyzers are measured side by
side in `bench/bench_knowledge.py` (`knowledge.analyzer` picks one): `grams` (each CJK character and each
overlapping pair; the default, best recall on Chinese in the benchmark, and robust to words a segmenter
does not know), `bigrams` (pairs only), `words` (jieba's search-mode segmentation through rjieba, the Rust
port, ~20x faster than the Python package). All three take other scripts as words, English stemmed by
Snowball, and drop stop words.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import filterfalse
from typing import Literal

import Stemmer
from langchain_text_splitters import RecursiveCharacterTextSplitter

CHUNK_RUNES = 600
CHUNK_OVERLAP = 60
#: Paragraphs first, then lines, then sentence ends (Chinese and Western), then clauses, then anything.
SEPARATORS = ["\n\n", "\n", "。", "！", "？", "；", "!", "?", ";", ". ", "，", "、", ",", " ", ""]
#: Unique terms of one query that reach the index (a pasted page as a query stays cheap).
MAX_QUERY_TERMS = 64

Mode = Literal["grams", "bigrams", "words"]

_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"[^\W_]+")
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_OR_WORD = re.compile(rf"[{_CJK_CHARS}]+|[^\W_{_CJK_CHARS}]+")
_IS_CJK = re.compile(rf"[{_CJK_CHARS}]")

#: Words that carry no topic. Short on purpose: BM25's IDF already discounts common words; these lists
#: make "a query of only stop words" recognizable and keep the index small.
_STOP_TEXT = """a about an and are as at be been but by can could did do does for from had has have how i if in into
    is it its me my no not of on or our please shall should so than that the their them then there these
    they this to us was we were what when where which who whom why will with would you your
    的 了 是 在 和 与 及 或 吗 呢 吧 啊 呀 么 嘛 哦 哈 嗯 着 过 地 得 之 其 而 也 都 就 还 又 很 最 太 更
    我 你 您 他 她 它 我们 你们 他们 她们 咱们 自己 这 那 这个 那个 这些 那些 这里 那里 这样 那样
    什么 怎么 怎样 如何 为什么 为何 哪 哪里 哪儿 哪些 哪个 谁 几 多少 请 请问 一下 一个 有 没有 没 不 要 会
    能 可以 可 想 让 把 被 给 对 从 向 到 上 下 中 里 个 些 吗 么 一 是不是 有没有 呗 啦"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
#: Pairs the grams analyzers leave out: two-character stop words, and two stop characters side by side.
_DROP_PAIRS = frozenset([w for w in STOP_WORDS if len(w) == 2]
                        + [a + b for a in STOP_WORDS if len(a) == 1 for b in STOP_WORDS if len(b) == 1])


def normalize(text: str) -> str:
    """The form two texts are compared in for de-duplication: NFKC, case-folded, whitespace collapsed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def runes(text: str) -> int:
    """Length in Unicode code points (what the limits count)."""
    return len(text)


def splitter() -> RecursiveCharacterTextSplitter:
    return RecursiveCharacterTextSplitter(
        chunk_size=CHUNK_RUNES, chunk_overlap=CHUNK_OVERLAP, length_function=len, separators=SEPARATORS,
        keep_separator="end", strip_whitespace=True,
    )


def split(text: str, chunker: RecursiveCharacterTextSplitter | None = None) -> list[str]:
    """Chunks of at most 600 runes that overlap by up to 60, cut at paragraph and sentence ends where they can."""
    return [c for c in (chunker or splitter()).split_text(text) if c.strip()]


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    stem: str = _STEMMER.stemWord(word)
    return stem


_STEMMER = Stemmer.Stemmer("english")
#: Words whose terms an analyzer keeps at hand (a vocabulary's worth; cleared when full).
WORD_CACHE = 65536


class _WordTerms(dict[str, str]):
    """A word's term ("" for a stop word), remembered: an English chunk has some 70 words, each looked up
    here in C (`map`) instead of a Python call per word; at most `WORD_CACHE` words are kept."""

    def __missing__(self, word: str) -> str:
        if len(self) >= WORD_CACHE:
            self.clear()
        term = self[word] = "" if word in STOP_WORDS else _stem(word) if word.isascii() and word.isalpha() else word
        return term


class Analyzer:
    """Turns text into search terms; the same function serves documents and queries."""

    def __init__(self, mode: Mode = "grams") -> None:
        self.mode: Mode = mode
        self._word_terms = _WordTerms()
        if mode == "words":
            import rjieba  # loads its dictionary (~0.2 s): only when this analyzer is chosen

            self._cut = rjieba.cut_for_search

    def terms(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFKC", text).casefold()
        return self._words(text) if self.mode == "words" else self._grams(text, self.mode == "grams")

    def query_terms(self, text: str) -> list[str]:
        """Unique terms of a query in first-seen order, at most MAX_QUERY_TERMS."""
        return list(dict.fromkeys(self.terms(text)))[:MAX_QUERY_TERMS]

    def _words(self, text: str) -> list[str]:
        out: list[str] = []
        words = self._word_terms
        for piece in self._cut(text):  # a piece is a word or two: a loop costs less here than map's set-up
            for token in _TOKEN.findall(piece):
                term = words[token]
                if term:
                    out.append(term)
        return out

    def _grams(self, text: str, unigrams: bool) -> list[str]:
        """Each CJK run's pairs, then its characters, leaving out stop words (a pair of two stop characters
        too); the pairs and filters run in C (`map`, `filterfalse`): ~780 terms a Chinese chunk, made at every
        add, where a generator with a test per pair cost a quarter more."""
        words = self._word_terms
        if text.isascii():  # no CJK: its words only, looked up in C
            return list(filter(None, map(words.__getitem__, _TOKEN.findall(text))))
        out: list[str] = []
        extend = out.extend
        for run in _CJK_OR_WORD.findall(text):
            if not _IS_CJK.match(run):
                term = words[run]
                if term:
                    out.append(term)
            elif len(run) == 1:
                if run not in STOP_WORDS:
                    out.append(run)
            else:
                extend(filterfalse(_DROP_PAIRS.__contains__, map(str.__add__, run, run[1:])))
                if unigrams:
                    extend(filterfalse(STOP_WORDS.__contains__, run))
        return out
