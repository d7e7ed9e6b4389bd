"""Cranfield's figures on the committed site agree with independent references, computed here from
``corpora/cranfield`` without sitegen's rankers or metrics:

- BM25: bm25s (``method="lucene"``, k1 1.2, b 0.75) over the same tokens sitegen ranks (its tokenizer, title and
  text one line apart), the positive scores ranked, scored with ir_measures (trec_eval's nDCG@10);
- dense and dense-mpnet: the committed vectors are sentence-transformers' own ``SentenceTransformer.encode`` of
  the packaged all-MiniLM-L6-v2 and of the joined all-mpnet-base-v2, normalised (a sample drawn by a fixed seed is
  encoded again, :mod:`tests.reference_vectors`: the rest are re-embedded by ``sitegen audit --reembed``, whose
  record the Reproducibility page shows), and ranked by exact float64 cosine in numpy, scored the same way, they
  give the nDCG@10 the report shows.

Within 0.005 nDCG@10: the references break score ties their own way, and the dense one batches texts, which moves
a vector's last bits. docs/results.md quotes the figures next to what the literature reports for Cranfield.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import ir_measures
import numpy as np
import pytest
from ir_measures import nDCG

from sitegen.inputs.corpus import load_corpus, passage_text
from sitegen.rankers import RankInputs
from sitegen.rankers.bm25 import BM25Ranker
from sitegen.rankers.tokenize import tokenize
from sitegen.scoring.metrics import evaluate
from tests.helpers import REPO, build, read_evidence
from tests.reference_vectors import CommittedVectors, EncodedSample, checked_vectors

# Slow: Cranfield's 1,400 passages, ranked by the references here
pytestmark = pytest.mark.slow

CRANFIELD = REPO / "corpora" / "cranfield"
SITE_METRICS = REPO / "site" / "evidence" / "cranfield" / "metrics.json"
TOLERANCE = 0.005
DEPTH = 100


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(CRANFIELD)


def _ndcg10(corpus, run: dict[str, dict[str, float]]) -> float:
    qrels = [ir_measures.Qrel(q, d, g) for q, grades in corpus.qrels.items() for d, g in grades.items()]
    scored = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    return ir_measures.calc_aggregate([nDCG @ 10], qrels, scored)[nDCG @ 10]


def bm25_reference(corpus) -> float:
    import bm25s

    vocabulary: dict[str, int] = {}
    passages = [
        [vocabulary.setdefault(t, len(vocabulary)) for t in tokenize(passage_text(d))] for d in corpus.documents
    ]
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    retriever.index(bm25s.tokenization.Tokenized(ids=passages, vocab=vocabulary), show_progress=False)
    run = {}
    for query in corpus.queries:
        ids = [vocabulary[t] for t in dict.fromkeys(tokenize(query.text)) if t in vocabulary]
        scores = retriever.get_scores(ids) if ids else np.zeros(len(passages))
        top = np.argsort(-scores, kind="stable")[:DEPTH]
        run[query.query_id] = {corpus.documents[i].doc_id: float(scores[i]) for i in top if scores[i] > 0}
    return _ndcg10(corpus, run)


def _exact_cosine_run(
    corpus, vectors: CommittedVectors, candidates: dict[str, list[str]] | None = None
) -> dict[str, dict[str, float]]:
    """Each question's top 100 of ``candidates`` (every passage where None) by float64 cosine of ``vectors``,
    ties by doc id."""
    row_of = {d: i for i, d in enumerate(vectors.passage_ids)}
    question_row = {q: i for i, q in enumerate(vectors.question_ids)}
    run = {}
    for query in corpus.queries:
        pool = candidates[query.query_id] if candidates else list(vectors.passage_ids)
        scores = vectors.passages[[row_of[d] for d in pool]] @ vectors.questions[question_row[query.query_id]]
        order = sorted(range(len(pool)), key=lambda i: (-scores[i], pool[i]))[:DEPTH]
        run[query.query_id] = {pool[i]: float(DEPTH - r) for r, i in enumerate(order)}
    return run


def committed(ranker: str) -> float:
    """The nDCG@10 the committed report shows for Cranfield."""
    if not SITE_METRICS.is_file():
        pytest.fail("site/ has no cranfield evidence: rebuild the site (sitegen build) and commit it")
    return json.loads(SITE_METRICS.read_text())[ranker]["overall"]["ndcg@10"]


def test_sitegen_bm25_on_cranfield_equals_bm25s_within_tolerance(corpus) -> None:
    run = BM25Ranker("bm25", stemmed=False).rank(RankInputs(corpus=corpus, embeddings=None, runs={}), DEPTH)
    rankings = {q: [h.doc_id for h in hits] for q, hits in run.hits.items()}
    ours = evaluate(rankings, corpus.qrels, {q.query_id: q.kind for q in corpus.queries}, ["ndcg@10"])
    reference = bm25_reference(corpus)
    assert abs(ours["overall"]["ndcg@10"] - reference) <= TOLERANCE, (ours["overall"]["ndcg@10"], reference)
    assert reference > 0.3  # a sanity floor: Cranfield's BM25 is far from random


def test_the_committed_cranfield_bm25_ndcg10_equals_the_reference(corpus) -> None:
    reference = bm25_reference(corpus)
    assert abs(committed("bm25") - reference) <= TOLERANCE, (committed("bm25"), reference)


def test_the_committed_cranfield_dense_ndcg10_equals_sentence_transformers_and_exact_cosine(
    corpus, minilm_sample: EncodedSample
) -> None:
    reference = _ndcg10(corpus, _exact_cosine_run(corpus, checked_vectors("dense", minilm_sample)))
    assert abs(committed("dense") - reference) <= TOLERANCE, (committed("dense"), reference)


# all-mpnet-base-v2 (sitegen[mpnet]): the bar is 4 decimals, so half a unit in the fourth place.
FOUR_DECIMALS = 5e-5


def test_the_committed_cranfield_dense_mpnet_ndcg10_equals_an_exact_cosine_ranking_to_4_decimals(
    corpus, mpnet_sample: EncodedSample
) -> None:
    reference = _ndcg10(corpus, _exact_cosine_run(corpus, checked_vectors("dense-mpnet", mpnet_sample)))
    assert abs(committed("dense-mpnet") - reference) <= FOUR_DECIMALS, (committed("dense-mpnet"), reference)


def test_the_committed_cranfield_rerank_mpnet_equals_reranking_its_first_stage_by_exact_cosine(
    corpus, mpnet_sample: EncodedSample
) -> None:
    first = json.loads((SITE_METRICS.parent / "runs" / "rrf-dense-bm25.json").read_text())["queries"]
    top50 = {q: [hit[0] for hit in hits[:50]] for q, hits in first.items()}  # packed rows: [doc id, score, ...]
    reference = _ndcg10(corpus, _exact_cosine_run(corpus, checked_vectors("dense-mpnet", mpnet_sample), top50))
    assert abs(committed("rerank-mpnet") - reference) <= FOUR_DECIMALS, (committed("rerank-mpnet"), reference)


def test_a_bi_encoder_rerank_of_bm25s_top_100_by_mpnet_equals_an_exact_cosine_rerank_to_4_decimals(
    corpus, mpnet_sample: EncodedSample, tmp_path: Path
) -> None:
    """Cranfield built here with a declared rerank (bm25's top 100 by dense-mpnet's cosine), its vectors taken
    from the committed bundle; the reference reranks the same 100 by SentenceTransformer.encode's vectors."""
    folder = shutil.copytree(CRANFIELD, tmp_path / "corpora" / "cranfield")
    (folder / "FROZEN.json").unlink()  # this copy gains a sitegen.json: a variant, not the frozen collection
    scorer = {"kind": "bi-encoder", "embedding": "dense-mpnet"}
    reranks = [{"name": "rerank-bm25-mpnet", "first_stage": "bm25", "candidates": 100, "scorer": scorer}]
    (folder / "sitegen.json").write_text(json.dumps({"reranks": reranks}), encoding="utf-8")
    site = tmp_path / "site"
    result = build(tmp_path / "corpora", site, model={}, rankers=("bm25", "dense-mpnet"), vectors_from=REPO / "site")
    assert result.embed_stats.embedded == 0  # every vector is the committed one
    bm25 = read_evidence(site, "evidence/cranfield/runs/bm25.json")["queries"]
    top100 = {q: [hit["doc_id"] for hit in hits[:100]] for q, hits in bm25.items()}
    got = read_evidence(site, "evidence/cranfield/metrics.json")["rerank-bm25-mpnet"]["overall"]["ndcg@10"]
    reference = _ndcg10(corpus, _exact_cosine_run(corpus, checked_vectors("dense-mpnet", mpnet_sample), top100))
    assert abs(got - reference) <= FOUR_DECIMALS, (got, reference)
