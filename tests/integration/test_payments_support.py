"""The shipped payments-support corpus: its promises, and a real build with the packaged model."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.inputs.corpus import load_corpus, passage_text
from sitegen.rankers import DEFAULT_RANKERS
from sitegen.scoring.metrics import metric_names
from tests.helpers import REPO, assert_metrics_match_trec_eval

# Filtered variants run only where questions carry a metadata filter; these corpora have none.
UNFILTERED_RANKERS = tuple(r for r in DEFAULT_RANKERS if not r.endswith("-filtered"))

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


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    """A cold build and a warm rebuild with the real packaged model, sharing one fresh cache."""
    root = tmp_path_factory.mktemp("payments")
    cache = root / "cache"
    outputs = []
    for name in ("cold", "warm"):
        result = CliRunner().invoke(
            cli,
            [
                "build",
                "--corpora",
                str(REPO / "corpora"),
                "--only",
                "payments-support",
                "--out",
                str(root / name),
                "--cache-dir",
                str(cache),
            ],
        )
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    return root / "cold", root / "warm", outputs[0], outputs[1]


def test_build_writes_every_ranker_for_all_sixty_questions(two_builds) -> None:
    cold, _, output, _ = two_builds
    assert "0 from the cache, 154 texts embedded" in output
    for ranker in UNFILTERED_RANKERS:
        run = json.loads((cold / "evidence" / "payments-support" / "runs" / f"{ranker}.json").read_text())
        assert len(run["queries"]) == 60
        trec_queries = {
            line.split()[0]
            for line in (cold / "evidence" / "payments-support" / "runs" / f"{ranker}.trec").read_text().splitlines()
        }
        assert trec_queries == {q for q, hits in run["queries"].items() if hits}


def test_payments_metrics_equal_trec_eval(two_builds) -> None:
    cold, _, _, _ = two_builds
    names = metric_names()  # MAP, R-precision and recall@100 among them
    assert assert_metrics_match_trec_eval(cold, "payments-support") == len(UNFILTERED_RANKERS) * 60 * len(names)


def test_rebuild_embeds_nothing_and_gives_identical_evidence(two_builds) -> None:
    cold, warm, _, output = two_builds
    assert "embedded nothing: 154 vectors from the cache" in output and "embedded 0" not in output
    files = sorted(p.relative_to(cold) for p in cold.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(warm) for p in warm.rglob("*") if p.is_file())
    for rel in files:
        assert (cold / rel).read_bytes() == (warm / rel).read_bytes(), rel


def test_model_weights_sha256_is_recorded(two_builds) -> None:
    from sitegen.hashing import sha256_file
    from sitegen.rankers.embeddings import model_folder

    manifest = json.loads((two_builds[0] / "evidence" / "manifest.json").read_text())
    assert manifest["model"]["weights_sha256"] == sha256_file(model_folder() / "model.safetensors")


def test_a_vector_does_not_depend_on_the_texts_embedded_with_it(tmp_path: Path) -> None:
    """An incremental rebuild must give the same bytes as a cold one."""
    from sitegen.rankers.embeddings import EmbeddingCache, EmbeddingModel, cache_key, embed_texts

    corpus = load_corpus(CORPUS)
    texts = [passage_text(d) for d in corpus.documents[:12]]
    model = EmbeddingModel()
    together, _ = embed_texts(texts, model, EmbeddingCache(tmp_path / "a", cache_key(model.config)))
    alone, _ = embed_texts(texts[5:6], model, EmbeddingCache(tmp_path / "b", cache_key(model.config)))
    assert together[5].tobytes() == alone[0].tobytes()
