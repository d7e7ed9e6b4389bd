"""A second stage: the first ``candidates`` hits of another ranker's run, scored again and reordered.

A rerank ranker names its first stage (any ranker of the build: a fusion, a filtered twin, an external run)
and a scorer, which is one of three declared kinds, each a class below with its own verifier and basis:

- :class:`BiEncoderScorer`: the cosine between the question's and each candidate's frozen vectors of one
  embedding model (``embedding`` names the dense ranker whose vectors it reads). The standalone audit
  recomputes every score from the stored vectors.
- :class:`CrossEncoderScorer`: a sentence-transformers ``CrossEncoder`` (hub id from the local Hugging Face
  cache, or a local folder) scoring (question, passage) pairs. Its scores are stored in the run; the audit
  checks that the list is exactly the first stage's top N ordered by them, and ``sitegen audit --rescore``
  runs the model again.
- :class:`HookScorer`: your own function ``(question, candidates, *, corpus, query_id) -> [score, ...]``, one
  score per candidate, given each candidate's text and first-stage rank and score (:class:`Candidate`). Its
  scores are stored and checked as a cross-encoder's are; it cannot be rerun by the audit.

Order (the documented tie rule): higher score first, then document id ascending. Each hit records its rank
in the first stage as its one component rank, so a page can say how far the rerank moved it.
"""

from __future__ import annotations

import hashlib
import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from sitegen.errors import SitegenError
from sitegen.inputs.corpus import Corpus, passage_text
from sitegen.rankers.base import Basis, Contract, Family, Hit, RankInputs, Run
from sitegen.rankers.dense import fixed_order_dot

if TYPE_CHECKING:
    from sitegen.embedding.models import ModelSpec
    from sitegen.embedding.vectors import CorpusEmbeddings

__all__ = [
    "PACKAGED_EMBEDDING",
    "TIE_RULE",
    "BiEncoderScorer",
    "Candidate",
    "CrossEncoderScorer",
    "HookScorer",
    "RerankRanker",
    "Scorer",
    "frozen_vectors",
    "local_weights_sha256",
    "rerank_order",
]

TIE_RULE = "score descending, then document id ascending"
#: The dense ranker whose vectors every build has (the packaged all-MiniLM-L6-v2): ``RankInputs.embeddings``.
PACKAGED_EMBEDDING = "dense"


@dataclass(frozen=True)
class Candidate:
    """One first-stage hit as a reranker hook sees it."""

    doc_id: str
    text: str
    rank: int
    score: float


def frozen_vectors(inputs: RankInputs, embedding: str, model: ModelSpec | None = None) -> CorpusEmbeddings:
    """The frozen vectors of the embedding model the dense ranker ``embedding`` ranks with: ``dense``'s
    (``model`` None) or the model entry ``model``'s."""
    if model is None and embedding != PACKAGED_EMBEDDING:
        raise SitegenError(
            f"embedding {embedding!r}: no model entry of this build ranks by that name; a bi-encoder rerank can "
            f"use {PACKAGED_EMBEDDING!r} or a model entry's dense ranker"
        )
    vectors = inputs.embeddings_for(model)
    if vectors is None:
        raise SitegenError(f"embedding {embedding!r}: no vectors were computed for corpus {inputs.corpus.name}")
    return vectors


def rerank_order(doc_ids: Sequence[str], scores: Sequence[float]) -> list[int]:
    """Positions of ``doc_ids`` in rerank order: higher score first, then document id ascending."""
    return sorted(range(len(doc_ids)), key=lambda i: (-scores[i], doc_ids[i]))


@dataclass(frozen=True)
class BiEncoderScorer:
    """Cosine between frozen vectors of the embedding model ``embedding`` (a dense ranker's name), computed
    as :func:`sitegen.rankers.dense.fixed_order_dot` does, so every machine stores the same bits."""

    embedding: str = PACKAGED_EMBEDDING
    #: the model entry ``embedding`` ranks by (None: ``dense``'s packaged model), so the build embeds its vectors
    model: ModelSpec | None = None
    verifier: ClassVar[str] = "bi-encoder rerank"
    basis: ClassVar[tuple[Basis, ...]] = (Basis.VECTORS,)
    uses_embeddings: ClassVar[bool] = True
    #: a passage's score does not depend on the other candidates and the audit recomputes it: the build sweeps
    #: the depth N (sitegen.scoring.rerank_sweep)
    sweepable: ClassVar[bool] = True

    def params(self, inputs: RankInputs | None = None) -> dict[str, Any]:
        found = {"scorer": "bi-encoder", "embedding": self.embedding}
        if inputs is not None:
            vectors = frozen_vectors(inputs, self.embedding, self.model)
            found |= {"model": vectors.model, "weights_sha256": vectors.weights_sha256}
        return found | {"score": "float64 sum of the exact float32 component products in a fixed pairwise order"}

    def scorer_for(self, inputs: RankInputs) -> Callable[[str, str, Sequence[Candidate]], list[float]]:
        vectors = frozen_vectors(inputs, self.embedding, self.model)
        doc_rows = {d: i for i, d in enumerate(vectors.doc_ids)}
        query_rows = {q: i for i, q in enumerate(vectors.query_ids)}

        def score(query_id: str, _text: str, candidates: Sequence[Candidate]) -> list[float]:
            rows = [doc_rows[c.doc_id] for c in candidates]
            exact = fixed_order_dot(vectors.doc_vectors[rows], vectors.query_vectors[query_rows[query_id]])
            return [float(s) for s in exact]

        return score


def local_weights_sha256(folder: Path) -> str | None:
    """sha256 of a local model folder's weights file, None where it has none the build recognises."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            digest = hashlib.sha256()
            with (folder / name).open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            return digest.hexdigest()
    return None


@dataclass(frozen=True)
class CrossEncoderScorer:
    """A sentence-transformers ``CrossEncoder``: ``model`` a hub id (read from the local Hugging Face cache;
    nothing is downloaded) or a local folder. Scores are the model's outputs (sigmoid for one label)."""

    model: str
    batch_size: int = 32
    max_length: int | None = None
    verifier: ClassVar[str] = "cross-encoder rerank"
    basis: ClassVar[tuple[Basis, ...]] = (Basis.MODEL,)
    uses_embeddings: ClassVar[bool] = False
    sweepable: ClassVar[bool] = False
    _loaded: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def params(self, inputs: RankInputs | None = None) -> dict[str, Any]:
        folder = Path(self.model)
        return {
            "scorer": "cross-encoder",
            "model": self.model,
            "model_sha256": local_weights_sha256(folder) if folder.is_dir() else None,
            "max_length": self.max_length,
            "score": "CrossEncoder.predict on (question text, passage title and text) pairs, float32 widened",
        }

    def load(self) -> Any:
        if "model" not in self._loaded:
            try:
                from sentence_transformers import CrossEncoder
            except ImportError as exc:  # pragma: no cover - a dependency of sitegen
                raise SitegenError(f"cross-encoder {self.model}: sentence-transformers is not installed") from exc
            try:
                self._loaded["model"] = CrossEncoder(
                    self.model, max_length=self.max_length, device="cpu", local_files_only=True
                )
            except Exception as exc:
                raise SitegenError(
                    f"cross-encoder {self.model}: cannot be loaded ({type(exc).__name__}); give a local folder, or "
                    "put the hub model in the Hugging Face cache first (huggingface-cli download MODEL)"
                ) from exc
        return self._loaded["model"]

    def predict(self, question: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        model = self.load()
        raw = model.predict([(question, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False)
        return [float(np.float32(s)) for s in np.asarray(raw).reshape(len(texts))]

    def scorer_for(self, inputs: RankInputs) -> Callable[[str, str, Sequence[Candidate]], list[float]]:
        def score(_query_id: str, text: str, candidates: Sequence[Candidate]) -> list[float]:
            return self.predict(text, [c.text for c in candidates])

        return score


def load_hook(target: str) -> Callable[..., Any]:
    """Import ``module:callable`` from the current project (the working directory first on ``sys.path``, as for a
    ``--retriever``); one-line SitegenError when that fails."""
    module_name, colon, attribute = target.partition(":")
    if not (colon and module_name and attribute):
        raise SitegenError(f"reranker hook {target!r} is not module:callable")
    from sitegen.rankers.retriever import _project_on_path  # the same rule as a --retriever: the project first

    try:
        with _project_on_path():
            found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except Exception as exc:
        raise SitegenError(f"reranker hook {target}: cannot be imported: {type(exc).__name__}: {exc}") from exc
    if not callable(found):
        raise SitegenError(f"reranker hook {target}: not a callable")
    return found


@dataclass(frozen=True)
class HookScorer:
    """Your function ``hook(question, candidates, *, corpus, query_id) -> [score, ...]``, one finite score per
    candidate in the order given; ``candidates`` are :class:`Candidate` objects (first-stage rank and score)."""

    target: str
    function: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    verifier: ClassVar[str] = "hook rerank"
    basis: ClassVar[tuple[Basis, ...]] = (Basis.EXTERNAL,)
    uses_embeddings: ClassVar[bool] = False
    sweepable: ClassVar[bool] = False

    def params(self, inputs: RankInputs | None = None) -> dict[str, Any]:
        return {"scorer": "hook", "hook": self.target, "score": "the hook's own scores"}

    def scorer_for(self, inputs: RankInputs) -> Callable[[str, str, Sequence[Candidate]], list[float]]:
        function = self.function or load_hook(self.target)
        corpus = inputs.corpus.name

        def score(query_id: str, text: str, candidates: Sequence[Candidate]) -> list[float]:
            where = f"reranker hook {self.target}: corpus {corpus}: question {query_id}"
            try:
                raw = list(function(text, list(candidates), corpus=corpus, query_id=query_id))
            except Exception as exc:
                raise SitegenError(f"{where}: raised {type(exc).__name__}: {exc}") from exc
            if len(raw) != len(candidates):
                raise SitegenError(f"{where}: returned {len(raw)} scores for {len(candidates)} candidates")
            scores = []
            for position, value in enumerate(raw, 1):
                ok = isinstance(value, int | float | np.floating | np.integer) and not isinstance(value, bool)
                if not ok or not math.isfinite(float(value)):
                    raise SitegenError(f"{where}: score {position} is {value!r}, not a finite number")
                scores.append(float(value))
            return scores

        return score


Scorer = BiEncoderScorer | CrossEncoderScorer | HookScorer


class RerankRanker:
    """``name``: the first ``candidates`` hits of ``first_stage``'s run, reordered by ``scorer``."""

    def __init__(self, name: str, first_stage: str, candidates: int, scorer: Scorer) -> None:
        if candidates < 1:
            raise SitegenError(f"rerank {name}: candidates must be at least 1, got {candidates}")
        self.name = name
        self.first_stage = first_stage
        self.candidates = candidates
        self.scorer = scorer
        self.contract = Contract(
            Family.RERANK,
            scorer.verifier,
            components=(first_stage,),
            uses_embeddings=scorer.uses_embeddings,
            basis=scorer.basis,
            model=scorer.model if isinstance(scorer, BiEncoderScorer) else None,
        )

    def params(self, inputs: RankInputs | None = None) -> dict[str, Any]:
        return {
            "method": self.contract.verifier,
            "first_stage": self.first_stage,
            "candidates": self.candidates,
            "components": [self.first_stage],
            "ties": TIE_RULE,
        } | self.scorer.params(inputs)

    def rank(self, inputs: RankInputs, depth: int) -> Run:
        first = inputs.runs.get(self.first_stage)
        if first is None:
            raise SitegenError(f"ranker {self.name!r} needs the run of {self.first_stage!r} first")
        score, texts = self.scorer.scorer_for(inputs), _texts(inputs.corpus)
        hits = {
            q.query_id: rerank_hits(
                self.first_stage,
                first.hits.get(q.query_id, ())[: min(self.candidates, depth)],
                texts,
                lambda cands, q=q: score(q.query_id, q.text, cands),
            )
            for q in inputs.corpus.queries
        }
        return Run(ranker=self.name, contract=self.contract, params=self.params(inputs), hits=hits)


def _texts(corpus: Corpus) -> Mapping[str, str]:
    return {d.doc_id: passage_text(d) for d in corpus.documents}


def rerank_hits(
    first_stage: str,
    top: Sequence[Hit],
    texts: Mapping[str, str],
    score: Callable[[Sequence[Candidate]], list[float]],
) -> tuple[Hit, ...]:
    """``top`` (the first stage's first N hits) reordered by ``score``'s values, each hit naming its first-stage
    rank as its component."""
    candidates = [Candidate(h.doc_id, texts.get(h.doc_id, ""), h.rank, h.score) for h in top]
    scores = score(candidates) if candidates else []
    ids = [c.doc_id for c in candidates]
    return tuple(
        Hit(doc_id=ids[i], rank=rank, score=scores[i], components=((first_stage, candidates[i].rank),))
        for rank, i in enumerate(rerank_order(ids, scores), start=1)
    )
