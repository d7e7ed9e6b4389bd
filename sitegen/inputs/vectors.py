"""A corpus's vectors: those it brings with it, or those the packaged model gives its texts (:func:`embed_corpus`).

Vectors a corpus brings: ``<corpus>/embeddings/``, made elsewhere (a GPU farm, a hosted API).

Layout, the same as a bundle's ``evidence/<corpus>/embeddings/`` so one description serves both::

    embeddings/index.json    {"model": name, "weights_sha256": hex (or "provenance": text, or both),
                              "dimensions": int, "dtype": "float32", "normalised": bool,
                              "passages": [ids in row order], "queries": [ids in row order]}
    embeddings/passages.npy  float32, one row per passage id
    embeddings/queries.npy   float32, one row per question id

An evidence ``index.json`` copied here is accepted too: its ``text_sha256`` lists, which a bundle holds for
vectors sitegen embedded (supplied ones are pinned by their files' sha256 instead), are then checked against
the corpus texts, so vectors of edited texts are refused. Every problem is a :class:`CorpusError` naming the
file. With ``"normalised": true`` every row must already be of unit length (within the audit's 1e-5);
with ``false`` the rows are scaled to unit length here, in a fixed summation order, and the evidence says so.
The rows are put in corpus order (the order every ranker and filter mask uses).

A chunked corpus (``chunking`` in ``sitegen.json``) is refused: it ranks chunks, and supplied vectors cover
whole passages; embedding the chunks with the packaged model would mix two models without saying so.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sitegen.embedding.cache import Embedder
from sitegen.embedding.model import MODEL_NAME
from sitegen.embedding.vectors import CorpusEmbeddings, EmbedStats, text_sha256
from sitegen.errors import CorpusError
from sitegen.hashing import sha256_file
from sitegen.inputs.corpus import Corpus, input_path, passage_text

__all__ = [
    "SUPPLIED_DIR",
    "SUPPLIED_FILES",
    "SUPPLIED_INDEX",
    "SUPPLIED_NORM_TOLERANCE",
    "SUPPLIED_PASSAGES",
    "SUPPLIED_QUERIES",
    "SuppliedVectors",
    "embed_corpus",
    "read_supplied_vectors",
    "unit_rows",
]

SUPPLIED_DIR = "embeddings"
SUPPLIED_INDEX = f"{SUPPLIED_DIR}/index.json"
SUPPLIED_PASSAGES = f"{SUPPLIED_DIR}/passages.npy"
SUPPLIED_QUERIES = f"{SUPPLIED_DIR}/queries.npy"
SUPPLIED_FILES = (SUPPLIED_INDEX, SUPPLIED_PASSAGES, SUPPLIED_QUERIES)
#: The audit's embedding norm tolerance: a row accepted here must pass the audit.
SUPPLIED_NORM_TOLERANCE = 1e-5
_KEYS = {"model", "weights_sha256", "provenance", "dimensions", "dtype", "normalised", "passages", "queries"}
# Written by sitegen into a bundle's index.json; accepted so an evidence folder can be supplied as it is.
_EVIDENCE_KEYS = {"config_sha256", "text_sha256", "supplied"}
_SHA256 = re.compile(r"[0-9a-f]{64}")
_EXAMPLES = 3


@dataclass(frozen=True)
class SuppliedVectors:
    """A corpus's own vectors, validated and in corpus order, with where they came from."""

    model: str
    weights_sha256: str | None
    provenance: str | None
    #: sitegen scaled the rows to unit length (``"normalised": false`` in index.json).
    normalised_here: bool
    #: sha256 of each supplied file, by path in the corpus folder.
    files_sha256: tuple[tuple[str, str], ...]
    doc_ids: tuple[str, ...]
    doc_vectors: np.ndarray
    query_ids: tuple[str, ...]
    query_vectors: np.ndarray

    def source(self) -> dict[str, Any]:
        """The ``supplied`` entry of the evidence's ``embeddings/index.json``."""
        return {
            "by": "corpus",
            "files_sha256": dict(self.files_sha256),
            "normalised_by_sitegen": self.normalised_here,
            "provenance": self.provenance,
        }

    def describe(self) -> str:
        """``model X, weights sha256 abc...`` or ``model X (provenance: ...)``, for logs and errors."""
        if self.weights_sha256:
            return f"model {self.model}, weights sha256 {self.weights_sha256[:12]}..."
        return f"model {self.model} (provenance: {self.provenance})"

    def embeddings(self) -> CorpusEmbeddings:
        """The vectors as the rankers take them; ``config_sha256`` None, so no later build reuses them
        as if the packaged model had made them."""
        return CorpusEmbeddings(
            model=self.model,
            weights_sha256=self.weights_sha256,
            doc_ids=self.doc_ids,
            doc_vectors=self.doc_vectors,
            query_ids=self.query_ids,
            query_vectors=self.query_vectors,
            config_sha256=None,
            supplied=self.source(),
        )


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, the same bits on every machine: squares summed column by column in
    float64 (each step one IEEE addition), then a correctly rounded sqrt and division."""
    wide = matrix.astype(np.float64)
    total = np.zeros(wide.shape[0])
    for column in range(wide.shape[1]):
        total += wide[:, column] * wide[:, column]
    return (wide / np.sqrt(total)[:, None]).astype(np.float32)


def _row_norms(matrix: np.ndarray) -> np.ndarray:
    wide = matrix.astype(np.float64)
    return np.sqrt(np.einsum("ij,ij->i", wide, wide))


def _examples(items: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in list(items)[:_EXAMPLES])
    return shown + (f" and {len(items) - _EXAMPLES} more" if len(items) > _EXAMPLES else "")


def _read_index(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise CorpusError(path, "not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise CorpusError(path, f"not valid JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(data, dict):
        raise CorpusError(path, "expected a JSON object")
    unknown = sorted(set(data) - _KEYS - _EVIDENCE_KEYS)
    if unknown:
        raise CorpusError(path, f"unknown keys {_examples(unknown)}; expected {', '.join(sorted(_KEYS))}")
    if not isinstance(data.get("model"), str) or not data["model"].strip():
        raise CorpusError(path, '"model" must name the model that made the vectors')
    weights, provenance = data.get("weights_sha256"), data.get("provenance")
    if weights is not None and not (isinstance(weights, str) and _SHA256.fullmatch(weights)):
        raise CorpusError(path, '"weights_sha256" must be the lowercase hex sha256 of the model weights')
    if provenance is not None and not (isinstance(provenance, str) and provenance.strip()):
        raise CorpusError(path, '"provenance" must be a non-empty text')
    if weights is None and provenance is None:
        raise CorpusError(
            path, 'give "weights_sha256" (the model weights\' sha256) or "provenance" (where the vectors came from)'
        )
    if data.get("dtype") != "float32":
        raise CorpusError(path, f'"dtype" is {data.get("dtype")!r}; supplied vectors must be "float32"')
    dims = data.get("dimensions")
    if type(dims) is not int or dims < 1:
        raise CorpusError(path, f'"dimensions" is {dims!r}; expected a positive integer')
    if not isinstance(data.get("normalised"), bool):
        raise CorpusError(path, '"normalised" must be true or false')
    for key in ("passages", "queries"):
        ids = data.get(key)
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise CorpusError(path, f'"{key}" must list the {key[:-1]} ids in row order')
        repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
        if repeated:
            raise CorpusError(path, f'"{key}" lists ids more than once: {_examples(repeated)}')
    return data


def _check_ids(path: Path, key: str, listed: Sequence[str], expected: Sequence[str]) -> None:
    listed_set, expected_set = set(listed), set(expected)
    missing = [i for i in expected if i not in listed_set]
    unknown = [i for i in listed if i not in expected_set]
    problems = []
    if missing:
        problems.append(f"{len(missing)} {key} of the corpus have no vector ({_examples(missing)})")
    if unknown:
        problems.append(f"{len(unknown)} ids are not {key} of the corpus ({_examples(unknown)})")
    if problems:
        raise CorpusError(path, f'"{key}": ' + "; ".join(problems))


def _read_matrix(path: Path, rows: int, dimensions: int, normalised: bool, ids: Sequence[str]) -> np.ndarray:
    try:
        matrix = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise CorpusError(path, f"not a .npy array: {exc}") from None
    if not isinstance(matrix, np.ndarray) or matrix.dtype.kind != "f" or matrix.dtype.itemsize != 4:
        raise CorpusError(path, f"holds {getattr(matrix, 'dtype', type(matrix).__name__)}; expected float32")
    if matrix.shape != (rows, dimensions):
        expected = f"({rows}, {dimensions}): {rows} ids and {dimensions} dimensions in index.json"
        raise CorpusError(path, f"shape {matrix.shape}; expected {expected}")
    matrix = np.ascontiguousarray(matrix, dtype="<f4")
    bad = np.flatnonzero(~np.all(np.isfinite(matrix), axis=1))
    if bad.size:
        raise CorpusError(path, f"{bad.size} rows hold NaN or infinity ({_examples([ids[i] for i in bad])})")
    norms = _row_norms(matrix)
    if normalised:
        off = np.flatnonzero(~(np.abs(norms - 1.0) <= SUPPLIED_NORM_TOLERANCE))
        if off.size:
            first = int(off[0])
            raise CorpusError(
                path,
                f"index.json says normalised, but {off.size} rows are not of unit length within "
                f"{SUPPLIED_NORM_TOLERANCE:g} ({_examples([ids[i] for i in off])}; {ids[first]!r} has norm "
                f'{norms[first]:.9g}); fix them, or set "normalised": false to have sitegen scale them',
            )
        return matrix
    zero = np.flatnonzero(norms == 0.0)
    if zero.size:
        shown = _examples([ids[i] for i in zero])
        raise CorpusError(path, f"{zero.size} rows are zero vectors, which have no direction ({shown})")
    return unit_rows(matrix)


def read_supplied_vectors(corpus: Corpus) -> SuppliedVectors | None:
    """The corpus's ``embeddings/`` vectors, checked against its passages and questions; None without them."""
    folder = corpus.root
    paths = [input_path(folder, name) for name in SUPPLIED_FILES]
    if all(p is None for p in paths) and not (folder / SUPPLIED_DIR).exists():
        return None
    for name, path in zip(SUPPLIED_FILES, paths, strict=True):
        if path is None:
            needs = ", ".join(SUPPLIED_FILES)
            raise CorpusError(folder / name, f"missing: a supplied {SUPPLIED_DIR}/ folder needs {needs}")
    index_path = folder / SUPPLIED_INDEX
    if "chunking" in corpus.config:
        raise CorpusError(
            index_path,
            "supplied vectors cover whole passages, but sitegen.json asks for chunking, whose chunks would need "
            'vectors from the same model; remove "chunking" or the embeddings/ folder',
        )
    index = _read_index(index_path)
    doc_ids = [d.doc_id for d in corpus.documents]
    query_ids = [q.query_id for q in corpus.queries]
    _check_ids(index_path, "passages", index["passages"], doc_ids)
    _check_ids(index_path, "queries", index["queries"], query_ids)
    hashes = index.get("text_sha256")
    if hashes is not None:
        _check_text_hashes(index_path, index, hashes, corpus)
    dims, normalised = index["dimensions"], index["normalised"]
    docs = _read_matrix(folder / SUPPLIED_PASSAGES, len(doc_ids), dims, normalised, index["passages"])
    queries = _read_matrix(folder / SUPPLIED_QUERIES, len(query_ids), dims, normalised, index["queries"])
    doc_row = {d: i for i, d in enumerate(index["passages"])}
    query_row = {q: i for i, q in enumerate(index["queries"])}
    return SuppliedVectors(
        model=index["model"],
        weights_sha256=index.get("weights_sha256"),
        provenance=index.get("provenance"),
        normalised_here=not normalised,
        files_sha256=tuple((name, sha256_file(folder / name)) for name in SUPPLIED_FILES),
        doc_ids=tuple(doc_ids),
        doc_vectors=np.ascontiguousarray(docs[[doc_row[d] for d in doc_ids]]),
        query_ids=tuple(query_ids),
        query_vectors=np.ascontiguousarray(queries[[query_row[q] for q in query_ids]]),
    )


def _check_text_hashes(path: Path, index: dict[str, Any], hashes: Any, corpus: Corpus) -> None:
    """An evidence index.json names each row's text sha256: vectors of texts edited since are refused."""
    texts = {
        "passages": {d.doc_id: passage_text(d) for d in corpus.documents},
        "queries": {q.query_id: q.text for q in corpus.queries},
    }
    for key, by_id in texts.items():
        listed = hashes.get(key) if isinstance(hashes, dict) else None
        if not isinstance(listed, list) or len(listed) != len(index[key]):
            raise CorpusError(path, f'"text_sha256" must map "{key}" to one sha256 per id')
        changed = [i for i, h in zip(index[key], listed, strict=True) if h != text_sha256(by_id[i])]
        if changed:
            raise CorpusError(
                path, f"the vectors of {len(changed)} {key} were made from other texts ({_examples(changed)})"
            )


def embed_corpus(corpus: Corpus, embedder: Embedder) -> tuple[CorpusEmbeddings, EmbedStats]:
    """Every passage (title and text) and question of a corpus, each behind the model entry's prefix, from
    frozen vectors, the cache or the model."""
    config = embedder.model.config
    passage_prefix, query_prefix = config.passage_prefix, config.query_prefix
    texts = [passage_prefix + passage_text(d) for d in corpus.documents]
    texts += [query_prefix + q.text for q in corpus.queries]
    name = getattr(embedder.model, "name", MODEL_NAME)
    label = f"embedding {corpus.name}" + ("" if name == MODEL_NAME else f" ({name})")
    vectors, stats = embedder.texts(texts, label)
    n_docs = len(corpus.documents)
    embeddings = CorpusEmbeddings(
        model=name,
        weights_sha256=embedder.model.weights_sha256,
        doc_ids=tuple(d.doc_id for d in corpus.documents),
        doc_vectors=vectors[:n_docs],
        query_ids=tuple(q.query_id for q in corpus.queries),
        query_vectors=vectors[n_docs:],
        config_sha256=config.sha256(),
        passage_prefix=passage_prefix,
        query_prefix=query_prefix,
    )
    return embeddings, stats
