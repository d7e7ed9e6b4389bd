"""The packaged models' committed Cranfield vectors, and a seeded sample of them encoded again by
sentence-transformers, for the references that rank Cranfield without sitegen's embedding code.

Encoding all of Cranfield takes about 15 minutes with all-mpnet-base-v2 on two cores (half a second a passage),
so the references rank by the vectors the committed bundle holds, once sentence-transformers has given the same
vectors for a sample of its texts drawn by a fixed seed. A wrong model, a wrong text or a changed vector moves a
component by far more than the tolerance; the rest of the vectors are rechecked by ``sitegen audit --reembed``,
whose record the Reproducibility page shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sitegen.inputs.corpus import load_corpus, passage_text

REPO = Path(__file__).resolve().parent.parent
CRANFIELD = REPO / "corpora" / "cranfield"
CRANFIELD_EVIDENCE = REPO / "site" / "evidence" / "cranfield"
#: Where each packaged model's dense ranker keeps its vectors in a corpus's evidence.
EMBEDDING_FOLDERS = {"dense": "embeddings", "dense-mpnet": "embeddings/dense-mpnet"}
#: Passages and questions encoded again per model: MiniLM is fast, mpnet takes about half a second a passage.
SAMPLE_SIZES = {"dense": (64, 64), "dense-mpnet": (16, 32)}
SAMPLE_SEED = 20261202
#: Batched encoding moves a component's last bits; a wrong text or model moves it by far more.
VECTOR_TOLERANCE = 1e-5


@dataclass(frozen=True)
class CommittedVectors:
    """One model's vectors of Cranfield in the committed bundle, as float64, rows in the bundle's order."""

    passage_ids: tuple[str, ...]
    passages: np.ndarray
    question_ids: tuple[str, ...]
    questions: np.ndarray

    def passage(self, doc_id: str) -> np.ndarray:
        return self.passages[self.passage_ids.index(doc_id)]


def committed_cranfield_vectors(ranker: str) -> CommittedVectors:
    """The committed vectors of ``ranker``'s model ("dense" or "dense-mpnet"), read with numpy and json only."""
    folder = CRANFIELD_EVIDENCE / EMBEDDING_FOLDERS[ranker]
    index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    return CommittedVectors(
        tuple(index["passages"]),
        np.load(folder / "passages.npy").astype(np.float64),
        tuple(index["queries"]),
        np.load(folder / "queries.npy").astype(np.float64),
    )


@dataclass(frozen=True)
class EncodedSample:
    """Cranfield passages and questions drawn by :data:`SAMPLE_SEED`, by id, with the vectors
    ``SentenceTransformer.encode`` gives them (normalised, batches of 32)."""

    passage_ids: tuple[str, ...]
    passages: np.ndarray
    question_ids: tuple[str, ...]
    questions: np.ndarray


def encode_sample(ranker: str, model_folder: Path) -> EncodedSample:
    """Draw the sample for ``ranker`` and encode it with sentence-transformers from ``model_folder``."""
    from sentence_transformers import SentenceTransformer

    corpus = load_corpus(CRANFIELD)
    passage_count, question_count = SAMPLE_SIZES[ranker]
    draw = np.random.default_rng(SAMPLE_SEED)
    rows = np.sort(draw.choice(len(corpus.documents), passage_count, replace=False))
    asked = np.sort(draw.choice(len(corpus.queries), question_count, replace=False))
    model = SentenceTransformer(str(model_folder), device="cpu")
    documents = [corpus.documents[i] for i in rows]
    questions = [corpus.queries[i] for i in asked]
    return EncodedSample(
        tuple(d.doc_id for d in documents),
        model.encode([passage_text(d) for d in documents], normalize_embeddings=True, batch_size=32),
        tuple(q.query_id for q in questions),
        model.encode([q.text for q in questions], normalize_embeddings=True, batch_size=32),
    )


def sample_difference(sample: EncodedSample, committed: CommittedVectors) -> float:
    """The largest difference of a component between the sample's vectors and the committed ones of its texts."""
    passages = committed.passages[[committed.passage_ids.index(d) for d in sample.passage_ids]]
    questions = committed.questions[[committed.question_ids.index(q) for q in sample.question_ids]]
    return float(max(np.abs(sample.passages - passages).max(), np.abs(sample.questions - questions).max()))


def checked_vectors(ranker: str, sample: EncodedSample) -> CommittedVectors:
    """The committed vectors of ``ranker``, once sentence-transformers has given the same vectors for the sample."""
    vectors = committed_cranfield_vectors(ranker)
    assert sample_difference(sample, vectors) <= VECTOR_TOLERANCE
    return vectors
