"""The one interface every ranker implements, and the one ordering rule they share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from sitegen.inputs.corpus import Corpus

if TYPE_CHECKING:
    from sitegen.embedding.models import ModelSpec
    from sitegen.embedding.vectors import CorpusEmbeddings

__all__ = ["Basis", "Contract", "Family", "Hit", "RankInputs", "Ranker", "Reproduction", "Run", "doc_id_order", "top_k"]


class Family(str, Enum):
    """How a ranker ranks, and so how the audit can check it: lexical, dense and fusion runs are
    recomputed from the inputs alone; PostgreSQL runs are checked as far as a server-less check can;
    external runs are compared with the file they came from."""

    LEXICAL = "lexical"
    DENSE = "dense"
    FUSION = "fusion"
    POSTGRES = "postgres"
    EXTERNAL = "external"
    #: a first stage's top N reordered by a second scorer (:mod:`sitegen.rankers.rerank`)
    RERANK = "rerank"


class Basis(str, Enum):
    """What the standalone audit's check of a ranking rests on, in the order the pages list them."""

    #: recomputed from the bundled inputs alone (BM25)
    INPUTS = "inputs"
    #: recomputed from the stored vectors; that they are the model's for these texts, only
    #: ``sitegen audit --reembed`` shows
    VECTORS = "vectors"
    #: PostgreSQL's parser and ts_rank_cd: checked without a server as far as that goes, recomputed only by
    #: ``sitegen audit --postgres``
    POSTGRES = "postgres"
    #: another system's run: its metrics are checked, its ranking cannot be reproduced from the bundle
    EXTERNAL = "external"
    #: scores a model gave that the audit does not run (a cross-encoder): it checks their order and the
    #: candidates; only ``sitegen audit --rescore`` runs the model again
    MODEL = "model"

    @property
    def recomputable(self) -> bool:
        return self in (Basis.INPUTS, Basis.VECTORS)


@dataclass(frozen=True)
class Reproduction:
    """A ranker's claim to give the same list as another ranker (an index against an exact search, SQL
    against Python): the report counts the questions whose top ``top`` ids agree, in order."""

    ranker: str
    top: int
    claim: str


@dataclass(frozen=True)
class Contract:
    """What a ranker declares about itself. The build, experiments, evidence and the audit read these
    fields, never the ranker's name or its params.

    ``verifier`` names the audit's independent check for this ranker (written as ``params["method"]``);
    ``components`` are rankers whose runs must exist first: the lists a fusion fuses, or the runs the
    audit fuses to check a one-statement SQL fusion; ``unfiltered`` names the same ranker without the
    question's metadata filter, for the filtering table; ``chunking_sweep`` reruns the ranker on every
    chunking setting of the sweep; ``reproduces`` states which other ranker's list this one should give.
    """

    family: Family
    verifier: str
    components: tuple[str, ...] = ()
    filtered: bool = False
    unfiltered: str | None = None
    uses_embeddings: bool = False
    uses_postgres: bool = False
    chunking_sweep: bool = False
    reproduces: Reproduction | None = None
    #: What the audit's check of this ranker's own lists rests on (a fusion's rest on its components'); a
    #: list resting on PostgreSQL or an external source is not recomputable from the bundle, and such a row,
    #: and any fusion over it, never wins a "best" mark over a verified one.
    basis: tuple[Basis, ...] = ()
    #: The model entry whose vectors the ranker ranks by (``uses_embeddings``); None: the ``dense`` model's
    #: (or the vectors a corpus supplies). The build embeds each entry named here, once per corpus.
    model: ModelSpec | None = None

    def as_dict(self) -> dict[str, Any]:
        """The evidence form: what a run's JSON records beside its params."""
        return {
            "family": self.family.value,
            "verifier": self.verifier,
            "components": list(self.components),
            "filtered": self.filtered,
            "unfiltered": self.unfiltered,
        }


@dataclass(frozen=True)
class Hit:
    """One ranked passage; ``components`` holds each fused list's rank (None: absent)."""

    doc_id: str
    rank: int
    score: float
    components: tuple[tuple[str, int | None], ...] = ()


@dataclass(frozen=True)
class Run:
    """A ranker's output: for every query id, its hits in rank order (rank 1 first), with the
    contract of the ranker that made it."""

    ranker: str
    contract: Contract
    params: Mapping[str, Any]
    hits: Mapping[str, tuple[Hit, ...]]
    #: The bytes of the index the ranker built and ranked with (BM25: its postings), measured while it ranked so
    #: that ``cost.json`` need not build it again; None where the ranker builds no index of its own.
    index_bytes: int | None = None


@dataclass(frozen=True)
class RankInputs:
    """What a ranker may read: the corpus, its embeddings (``dense``'s, and each other model entry's in
    ``vectors`` by entry name), earlier rankers' runs and, for the PostgreSQL rankers, the corpus loaded into a
    live server."""

    corpus: Corpus
    embeddings: CorpusEmbeddings | None = None
    runs: Mapping[str, Run] = field(default_factory=dict)
    postgres: Any = None
    vectors: Mapping[str, CorpusEmbeddings] = field(default_factory=dict)

    def embeddings_for(self, model: ModelSpec | None) -> CorpusEmbeddings | None:
        """The vectors of ``model`` (a contract's ``model``): ``embeddings`` for None, else that entry's."""
        return self.embeddings if model is None else self.vectors.get(model.name)


class Ranker(Protocol):
    """A named, parameterised ranking method with a declared :class:`Contract`.

    ``contract.uses_embeddings`` asks the build to embed the corpus and queries first;
    ``contract.uses_postgres`` asks it to start PostgreSQL and load the corpus into it.
    """

    name: str
    contract: Contract

    def params(self) -> dict[str, Any]: ...

    def rank(self, inputs: RankInputs, depth: int) -> Run: ...


def doc_id_order(doc_ids: tuple[str, ...] | list[str]) -> np.ndarray:
    """Position of each document id in ascending id order, the tie-break key."""
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)
    key = np.empty(len(doc_ids), dtype=np.int64)
    key[order] = np.arange(len(doc_ids), dtype=np.int64)
    return key


_BLOCK = 64


def top_k(scores: np.ndarray, id_key: np.ndarray, depth: int, positive_only: bool) -> np.ndarray:
    """Indices of the best ``depth`` scores: higher score first, then document id ascending.

    Ties straddling the cut-off are resolved by id, never by array position, so the
    result does not depend on the order documents were loaded in.

    For speed, only scores at or above a lower bound on the ``depth``-th best are looked
    at again; the result is exactly that of selecting among all scores. On large arrays
    the bound is the ``depth``-th largest of the maxima of ``n // _BLOCK`` disjoint groups
    (at least ``depth`` scores reach it); on smaller ones it is the ``depth``-th best itself.
    """
    n = scores.shape[0]
    if depth <= 0 or n <= depth:
        candidates = np.flatnonzero(scores > 0) if positive_only else np.arange(n)
    else:
        rows = n // _BLOCK
        if rows >= 2 * depth:
            # Row i of the reshape holds scores[i * rows:(i + 1) * rows]; the column maxima are
            # the maxima of ``rows`` disjoint groups of _BLOCK scores each.
            group_max = scores[: rows * _BLOCK].reshape(_BLOCK, rows).max(axis=0)
            bound = np.partition(group_max, rows - depth)[rows - depth]
        else:
            bound = np.partition(scores, n - depth)[n - depth]
        if positive_only and not bound > 0:
            candidates = np.flatnonzero(scores > 0)
        else:
            candidates = np.flatnonzero(scores >= bound)
    if candidates.size > depth:
        cand_scores = scores[candidates]
        threshold = np.partition(cand_scores, cand_scores.size - depth)[cand_scores.size - depth]
        candidates = candidates[cand_scores >= threshold]
    order = np.lexsort((id_key[candidates], -scores[candidates]))
    return candidates[order][:depth]
