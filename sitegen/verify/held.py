"""The files a redacted bundle holds by reference, made ready for ``audit.py --inputs`` (``sitegen audit --inputs``).

The standalone audit checks the files brought against their sha256 and recomputes what needs them, the dense
rankings from vectors brought in ``DIR/<corpus>/embeddings/``. Vectors are withheld by default (an embedding
leaks its text), and nobody outside the publisher holds them; sitegen can make them again from the texts brought,
with the packaged model. :func:`prepare_inputs` lays out a folder as ``--inputs`` wants it: each corpus folder of
``DIR`` linked file by file, and, for a corpus whose vectors are withheld and not in ``DIR``, its texts re-embedded
into ``embeddings/passages.npy`` and ``queries.npy``, rows in the order of the bundle's ``embeddings/index.json``.
A re-embedding on another machine differs from the withheld vectors in the last bits, so the audit says the
vectors are not the withheld bytes and holds the dense rankings to them within its score tolerance.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sitegen.embedding.cache import Embedder, EmbeddingCache, cache_key, default_cache_dir
from sitegen.embedding.model import EmbeddingModel
from sitegen.errors import BundleError
from sitegen.inputs.chunk_settings import parse_chunking
from sitegen.inputs.chunking import chunk_corpus
from sitegen.inputs.corpus import load_corpus
from sitegen.inputs.vectors import SUPPLIED_PASSAGES, SUPPLIED_QUERIES, embed_corpus
from sitegen.publish.bundle import load_json
from sitegen.publish.layout import MANIFEST, CorpusFiles

__all__ = ["Reembedded", "prepare_inputs"]

# The vectors brought for a corpus lie in DIR/<corpus>/ as a corpus folder's supplied vectors do.
_PASSAGES, _QUERIES = SUPPLIED_PASSAGES, SUPPLIED_QUERIES


@dataclass(frozen=True)
class Reembedded:
    """One corpus whose withheld vectors were made again from the texts brought."""

    corpus: str
    passages: int
    queries: int


def _npy(matrix: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(matrix, dtype="<f4"), allow_pickle=False)
    return buffer.getvalue()


def _withheld_vectors(site: Path, corpus: str) -> bool:
    files = CorpusFiles(corpus)
    if not (site / files.referenced).is_file():
        return False
    return _PASSAGES in (load_json(site / files.referenced).get("files") or {})


def prepare_inputs(
    site: Path,
    inputs: Path,
    target: Path,
    model: EmbeddingModel | None = None,
    cache_dir: Path | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> list[Reembedded]:
    """Fill ``target`` (an empty folder) with what ``audit.py --inputs target`` reads: every corpus folder of
    ``inputs``, file by file as links, plus the withheld vectors of the site's redacted corpora re-embedded from
    the texts there when ``inputs`` does not bring them. Returns the corpora re-embedded."""
    corpora = load_json(site / MANIFEST).get("corpora") or []
    done: list[Reembedded] = []
    with ExitStack() as stack:
        cache = None
        for corpus in sorted(p.name for p in inputs.iterdir() if p.is_dir()):
            folder = target / corpus
            for path in sorted((inputs / corpus).rglob("*")):
                if path.is_file():
                    (folder / path.relative_to(inputs / corpus)).parent.mkdir(parents=True, exist_ok=True)
                    (folder / path.relative_to(inputs / corpus)).symlink_to(path.resolve())
            if corpus not in corpora or not _withheld_vectors(site, corpus) or (folder / _PASSAGES).exists():
                continue
            model = model or EmbeddingModel()
            if cache is None:
                key = cache_key(model.config, model.device)
                cache = EmbeddingCache(cache_dir or default_cache_dir(), key, model.config.dimensions)
                stack.callback(cache.close)
            done.append(_reembed(site, inputs / corpus, folder, model, cache, log))
    return done


def _reembed(site: Path, source: Path, folder: Path, model: EmbeddingModel, cache: EmbeddingCache, log) -> Reembedded:
    """One corpus's vectors from the texts in ``source``, written into ``folder/embeddings/`` in the row order of
    the bundle's index; refused when the bundle's vectors came from another model configuration."""
    files = CorpusFiles(source.name)
    index = load_json(site / files.vector_index)
    if index.get("config_sha256") != model.config.sha256():
        raise BundleError(
            site / files.vector_index,
            f"the withheld vectors were made with model configuration {index.get('config_sha256')}, and the "
            f"packaged model's is {model.config.sha256()}: they cannot be made again here",
        )
    corpus = load_corpus(source)
    if "chunking" in corpus.config:
        corpus = chunk_corpus(corpus, parse_chunking(corpus.config["chunking"]).default)
    embeddings, stats = embed_corpus(corpus, Embedder(model, cache))
    log(f"{corpus.name}: re-embedded the texts brought ({stats.embedded} embedded, {stats.cached} from the cache)")
    rows = {
        "passages": dict(zip(embeddings.doc_ids, embeddings.doc_vectors, strict=True)),
        "queries": dict(zip(embeddings.query_ids, embeddings.query_vectors, strict=True)),
    }
    (folder / _PASSAGES).parent.mkdir(parents=True, exist_ok=True)
    for name, rel in (("passages", _PASSAGES), ("queries", _QUERIES)):
        missing = [i for i in index[name] if i not in rows[name]]
        if missing:
            raise BundleError(site / files.vector_index, f"names {name} the texts brought lack, e.g. {missing[:3]}")
        (folder / rel).write_bytes(_npy(np.stack([rows[name][i] for i in index[name]])))
    return Reembedded(corpus.name, len(index["passages"]), len(index["queries"]))
