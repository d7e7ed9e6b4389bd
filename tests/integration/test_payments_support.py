"""The shipped payments-support corpus keeps its promises: sections and kinds, one right passage per question,
error codes with neighbours, paraphrases that share no content word with their passage. (What a build of it
publishes: test_committed_site.py.)"""

from __future__ import annotations

import re
from collections import Counter

from sitegen.inputs.corpus import load_corpus, passage_text
from tests.helpers import REPO

CORPUS = REPO / "corpora" / "payments-support"
# The stop list stated in the corpus README's paraphrase rule.
README_STOP_LIST = set(
    "the a an of to in is it my i do how what can for on and or with be are does why when should this that me "
    "we our you your not no".split()
)


def _words(text: str) -> set[str]:
    return {t for t in re.split(r"[^0-9a-z]+", text.lower()) if t and t not in README_STOP_LIST}


def test_corpus_has_the_promised_sections_kinds_and_one_right_passage_each() -> None:
    corpus = load_corpus(CORPUS)
    sections = Counter(d.metadata["section"] for d in corpus.documents)
    assert sections == {"error-code": 40, "product": 12, "setting": 12, "how-to": 30}
    assert Counter(q.kind for q in corpus.queries) == {
        "exact-code": 12,
        "exact-id": 12,
        "paraphrase": 24,
        "code-plus-words": 12,
    }
    assert all(len(corpus.relevant(q.query_id)) == 1 for q in corpus.queries)


def test_error_codes_have_neighbours_one_digit_apart() -> None:
    codes = [d.title.split()[0] for d in load_corpus(CORPUS).documents if d.metadata["section"] == "error-code"]
    for code in codes:
        neighbours = [c for c in codes if c != code and sum(a != b for a, b in zip(c, code, strict=True)) == 1]
        assert neighbours, code


def test_paraphrase_questions_share_no_content_word_with_their_passage() -> None:
    corpus = load_corpus(CORPUS)
    docs = {d.doc_id: d for d in corpus.documents}
    for query in corpus.queries:
        if query.kind != "paraphrase":
            continue
        (doc_id,) = corpus.relevant(query.query_id)
        passage = _words(passage_text(docs[doc_id]))
        question = _words(query.text)
        assert not question & passage, (query.query_id, question & passage)
        assert not {w.removesuffix("s") for w in question} & {w.removesuffix("s") for w in passage}


def test_code_and_id_questions_name_the_code_of_their_passage() -> None:
    corpus = load_corpus(CORPUS)
    docs = {d.doc_id: d for d in corpus.documents}
    for query in corpus.queries:
        if query.kind in ("exact-code", "code-plus-words", "exact-id"):
            (doc_id,) = corpus.relevant(query.query_id)
            identifiers = re.findall(r"\bE\d{4}\b|\b[A-Z]+-?\d+\b|\b[a-z0-9_]+(?:\.[a-z0-9_]+)+\b", query.text)
            assert any(i in docs[doc_id].title for i in identifiers), (query.query_id, identifiers)
