"""The cost benchmark's table (``sitegen.bench.cost``): which rankers it times for the models it was given, a
dense ranker's indexing time being its model's embedding time, and which models a pipeline embeds the question
with. Only the shape and the given times are asserted; measured latencies are the benchmark's, not a test's."""

from __future__ import annotations

import pytest

from sitegen.bench.cost import Embedded, corpus_timings
from sitegen.embedding.vectors import CorpusEmbeddings
from sitegen.inputs.corpus import Corpus, load_corpus, passage_text
from tests.helpers import FakeEmbeddingModel, write_corpus

RANKERS = ("bm25", "dense", "rrf-dense-bm25", "rerank-dense", "dense-mpnet", "rrf-mpnet-bm25", "rerank-mpnet")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return load_corpus(write_corpus(tmp_path_factory.mktemp("cost") / "tiny"))


def _embedded(corpus: Corpus, name: str, passages_s: float) -> Embedded:
    model = FakeEmbeddingModel()
    vectors = CorpusEmbeddings(
        name,
        "0" * 64,
        tuple(d.doc_id for d in corpus.documents),
        model.encode([passage_text(d) for d in corpus.documents]),
        tuple(q.query_id for q in corpus.queries),
        model.encode([q.text for q in corpus.queries]),
    )
    return Embedded(name, vectors, model.encode, passages_s)


def test_without_a_models_vectors_its_rankers_are_left_out(corpus: Corpus) -> None:
    table = corpus_timings(corpus, [_embedded(corpus, "dense", 2.0)], RANKERS)
    assert sorted(table["rankers"]) == ["bm25", "dense", "rerank-dense", "rrf-dense-bm25"]
    assert list(table["embeddings"]) == ["dense"] and table["embedding"]["passages_s"] == 2.0


def test_a_dense_rankers_indexing_time_is_its_models_embedding_time(corpus: Corpus) -> None:
    embedded = [_embedded(corpus, "dense", 2.0), _embedded(corpus, "dense-mpnet", 7.0)]
    rankers = corpus_timings(corpus, embedded, RANKERS)["rankers"]
    assert rankers["dense"]["index_s"] == 2.0 and rankers["dense-mpnet"]["index_s"] == 7.0
    assert rankers["rrf-mpnet-bm25"]["index_s"] is None and rankers["bm25"]["index_s"] is not None
    assert rankers["rerank-mpnet"]["reads"] == ["rrf-dense-bm25", "dense", "bm25"]


def test_only_pipelines_that_rank_by_vectors_embed_the_question(corpus: Corpus) -> None:
    embedded = [_embedded(corpus, "dense", 2.0), _embedded(corpus, "dense-mpnet", 7.0)]
    rankers = corpus_timings(corpus, embedded, RANKERS)["rankers"]
    assert not rankers["bm25"]["embeds_questions"]
    assert all(rankers[name]["embeds_questions"] for name in ("dense", "rrf-mpnet-bm25", "rerank-mpnet"))
