"""Where a text's vector comes from: frozen vectors first, then an on-disk cache, then the model.

A model's float output depends on the CPU's rounding (about 1e-7 between machines), so vectors are treated as
frozen inputs: a build first takes each text's vector from an earlier bundle (:class:`Embedder`'s ``frozen``)
when that bundle was embedded with the same :class:`sitegen.embedding.model.EmbeddingConfig`, then from the
cache, and embeds only what is left. The cache is one SQLite file per :func:`cache_key` (the configuration plus
the torch, transformers and sentence-transformers versions, everything that changes a vector); each row holds a
text's sha256, its float32 vector and a checksum of both, and a row that fails its checksum, has the wrong
length or is not a finite unit vector is dropped and embedded again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from sitegen.embedding.model import EMBEDDING_DIM, EmbeddingConfig, EmbeddingModel
from sitegen.embedding.paths import default_cache_dir
from sitegen.embedding.vectors import EmbedStats, text_sha256, usable_vector

__all__ = ["Embedder", "EmbeddingCache", "ProgressFactory", "cache_key", "default_cache_dir"]

_PROGRESS_CHUNK = 32
# The libraries whose versions are part of the cache key: they run the model.
_MODEL_LIBRARIES = ("torch", "transformers", "sentence-transformers")

#: ``progress(total, label)``: a bar with ``update(n)`` and ``finish()`` (the CLI's), for texts being embedded.
ProgressFactory = Callable[[int, str], Any]


def _library_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def cache_key(config: EmbeddingConfig, device: str = "cpu") -> str:
    """The cache file's key: the configuration, the versions of the libraries that run the model and,
    other than ``cpu`` (left out so existing caches stay valid), the device."""
    key: dict[str, Any] = {
        "config": config.as_dict(),
        "libraries": {name: _library_version(name) for name in _MODEL_LIBRARIES},
    }
    if device != "cpu":
        key["device"] = device
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()


class EmbeddingCache:
    """SQLite store of vectors for one :func:`cache_key`, keyed by the text's sha256, each row checksummed."""

    def __init__(self, folder: Path, key: str, dimensions: int = EMBEDDING_DIM) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"embeddings-{key}.sqlite"
        self.dimensions = dimensions
        self._db = sqlite3.connect(self.path)
        self._db.execute(
            "create table if not exists vectors (text_sha256 text primary key, vector blob, checksum text)"
        )

    def close(self) -> None:
        self._db.close()

    @staticmethod
    def _checksum(key: str, blob: bytes) -> str:
        return hashlib.sha256(key.encode("ascii") + b"\0" + blob).hexdigest()

    def get_many(self, keys: Sequence[str]) -> tuple[dict[str, np.ndarray], int]:
        """The usable vectors stored for ``keys``, and how many stored rows were rejected."""
        found: dict[str, np.ndarray] = {}
        rejected = 0
        unique = sorted(set(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"select text_sha256, vector, checksum from vectors where text_sha256 in ({marks})", chunk
            )
            for key, blob, checksum in rows:
                if not isinstance(blob, bytes) or checksum != self._checksum(key, blob) or len(blob) % 4:
                    rejected += 1
                    continue
                vector = np.frombuffer(blob, dtype="<f4").astype(np.float32)
                if not usable_vector(vector, self.dimensions):
                    rejected += 1
                    continue
                found[key] = vector
        return found, rejected

    def put_many(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = []
        for key, vector in items:
            blob = np.asarray(vector, dtype="<f4").tobytes()
            rows.append((key, blob, self._checksum(key, blob)))
        with self._db:
            self._db.executemany("insert or replace into vectors values (?, ?, ?)", rows)


@dataclass(frozen=True)
class Embedder:
    """How a build gets vectors: the model and its cache, a progress bar, the vectors of an earlier bundle by
    text sha256 (``frozen``), and whether to run the model for every text anyway (``reembed``)."""

    model: EmbeddingModel
    cache: EmbeddingCache
    progress: ProgressFactory | None = None
    frozen: Mapping[str, np.ndarray] | None = None
    reembed: bool = False

    def texts(self, texts: Sequence[str], label: str = "embedding") -> tuple[np.ndarray, EmbedStats]:
        """Vectors for ``texts`` in order: from ``frozen``, else the cache, else the model (every text with
        ``reembed``); ``label`` names the progress bar."""
        keys = [text_sha256(t) for t in texts]
        unique = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        from_bundle = rejected = 0
        if not self.reembed:
            if self.frozen:
                found = {k: self.frozen[k] for k in unique if k in self.frozen}
                from_bundle = len(found)
            cached, rejected = self.cache.get_many([k for k in unique if k not in found])
            found.update(cached)
        missing = [k for k in unique if k not in found]
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            batch = max(self.model.batch_size, _PROGRESS_CHUNK)
            bar = self.progress(len(missing), label) if self.progress else None
            for start in range(0, len(missing), batch):
                chunk = missing[start : start + batch]
                vectors = self.model.encode([text_of[k] for k in chunk])
                self.cache.put_many(list(zip(chunk, vectors, strict=True)))
                found.update(zip(chunk, vectors, strict=True))
                if bar is not None:
                    bar.update(len(chunk))
            if bar is not None:
                bar.finish()
        if keys:
            matrix = np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
        else:
            matrix = np.zeros((0, self.model.config.dimensions), dtype=np.float32)
        cached_count = len(unique) - len(missing) - from_bundle
        stats = EmbedStats(embedded=len(missing), cached=cached_count, frozen=from_bundle, rejected=rejected)
        return matrix, stats
