"""Splitting (K2), search terms for Chinese and English, the normal form used for de-duplication."""

from __future__ import annotations

import itertools

from services.knowledge.text import CHUNK_OVERLAP, CHUNK_RUNES, Analyzer, normalize, split


def test_chunks_are_at_most_600_runes_and_end_at_sentence_ends():
    sentence = "本群禁止发广告，违反三次的成员会被管理员移出群聊。"  # 25 runes, ends with 。
    text = sentence * 100
    chunks = split(text)
    assert len(chunks) >= 5
    assert all(len(c) <= CHUNK_RUNES for c in chunks)
    assert all(c.endswith("。") for c in chunks)
    assert "".join(chunks).count("移出群聊") >= 100  # nothing lost


def test_chunks_overlap_by_at_most_60_runes():
    text = "".join(f"第{i}条规定：每位成员都要遵守这里的规定！" for i in range(200))
    chunks = split(text)
    for a, b in itertools.pairwise(chunks):
        overlap = next((n for n in range(min(len(a), len(b)), 0, -1) if a.endswith(b[:n])), 0)
        assert 0 < overlap <= CHUNK_OVERLAP


def test_paragraphs_are_preferred_over_sentences():
    para = "First rule. " * 20
    chunks = split(f"{para}\n\n{para}\n\n{para}")
    assert all(c.startswith("First rule.") for c in chunks)


def test_chinese_text_gets_terms_and_stop_words_drop():
    for mode in ("grams", "bigrams", "words"):
        terms = Analyzer(mode).terms("请问群里可以发广告吗？")
        assert "广告" in terms and "群里" in terms, mode
        assert not {"请问", "可以", "吗"} & set(terms), mode
    assert {"广", "告"} <= set(Analyzer("grams").terms("发广告"))  # a one-character query still matches


def test_english_terms_are_stemmed_so_inflections_meet():
    a = Analyzer()
    assert set(a.terms("Resetting passwords")) == set(a.terms("reset password"))


def test_only_stop_words_or_emoji_give_no_terms():
    a = Analyzer()
    for query in ("the of and what", "😀🎉👍", "的了吗", "？！。", "   "):
        assert a.query_terms(query) == [], query
    assert Analyzer("bigrams").query_terms("😀 的了") == [] and Analyzer("words").query_terms("😀 的了") == []


def test_normal_form_ignores_case_width_and_spacing():
    assert normalize("Ｈｅｌｌｏ   World\n") == normalize("hello world")


def test_a_word_gives_the_same_term_from_the_cache_ascii_or_not_and_the_cache_stays_bounded(monkeypatch):
    from services.knowledge import text as text_module

    monkeypatch.setattr(text_module, "WORD_CACHE", 4)
    analyzer = Analyzer()
    english = "The members were warned twice; running flooding spam gets them removed by admins."
    first = analyzer.terms(english)
    assert first == ["member", "warn", "twice", "run", "flood", "spam", "get", "remov", "admin"]
    assert len(analyzer._word_terms) <= 4  # cleared when full, never larger
    assert analyzer.terms(english) == first  # the same terms again, partly from the cache
    # text with CJK takes the other path: its English words get the same terms
    assert analyzer.terms(english + " 刷屏") == [*first, "刷屏", "刷", "屏"]
    assert analyzer.terms("ＦＵＬＬ　ｗｉｄｔｈ the") == ["full", "width"]  # NFKC first, then all-ASCII
