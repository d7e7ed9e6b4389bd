"""Read a published evidence bundle: find it, check every file against its manifest, load its JSON.

Every consumer of an earlier bundle (``sitegen diff``, a build reusing stored vectors) goes through
:func:`open_bundle`, so none of them ever reads a file that does not match the manifest's sha256.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from sitegen.embedding.vectors import usable_vector
from sitegen.errors import BundleError
from sitegen.hashing import sha256_file
from sitegen.publish.layout import (
    EVIDENCE_DIR,
    GZIP_SUFFIX,
    MANIFEST,
    MANIFEST_NAME,
    CorpusFiles,
    corpus_file,
    gzipped_name,
    vector_index_files,
)

__all__ = [
    "REEMBED_TOLERANCE",
    "Bundle",
    "StoredVectors",
    "has_manifest",
    "load_json",
    "open_bundle",
    "read_stored",
    "stored_vectors",
]

#: Largest allowed absolute difference in any vector component between stored and recomputed
#: vectors. Re-embedding on another CPU changes the last bits of float32 arithmetic, not the third decimal.
REEMBED_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Bundle:
    """A bundle verified against its manifest: its evidence folder, the manifest, and path -> sha256."""

    evidence_dir: Path
    manifest: Mapping[str, Any]
    files: Mapping[str, str]

    def path(self, rel: str) -> Path:
        """The file for a manifest path (``evidence/...``), wherever the evidence folder itself lies."""
        return self.evidence_dir.joinpath(*PurePosixPath(rel).parts[1:])

    def stored(self, rel: str) -> str:
        """The path a file is stored under: ``rel``, or ``rel.gz`` when the manifest lists that one instead."""
        return gzipped_name(rel) if rel not in self.files and gzipped_name(rel) in self.files else rel

    def has(self, rel: str) -> bool:
        """Whether the manifest lists ``rel``, plain or compressed (and so :func:`open_bundle` verified it)."""
        return self.stored(rel) in self.files

    def require(self, rel: str) -> Path:
        """The file of a path the manifest lists (plain or ``.gz``); any other file is not evidence, and is
        refused."""
        if not self.has(rel):
            raise BundleError(self.path(MANIFEST), f"does not list {rel}, which is needed here")
        return self.path(self.stored(rel))


def read_stored(path: Path) -> bytes:
    """A bundle file's content: its bytes, decompressed when it is stored gzip-compressed (``NAME.gz``,
    sitegen.publish.evidence.write_stored)."""
    data = path.read_bytes()
    if path.name.endswith(GZIP_SUFFIX):
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise BundleError(path, f"not a readable gzip file: {exc}") from None
    return data


def load_json(path: Path) -> Any:
    """A bundle JSON file (plain, or ``NAME.gz``), or a one-line BundleError naming it (and the line of a syntax
    error)."""
    try:
        return json.loads(read_stored(path).decode("utf-8"))
    except OSError as exc:
        raise BundleError(path, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise BundleError(path, "not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise BundleError(f"{path}:{exc.lineno}", f"not valid JSON: {exc.msg}") from None


def _find_evidence_dir(path: Path) -> Path | None:
    """The evidence folder of a site folder, or ``path`` itself when it is one; None without a manifest."""
    if (path / MANIFEST).is_file():
        return path / EVIDENCE_DIR
    if (path / MANIFEST_NAME).is_file():
        return path
    return None


def _evidence_dir(path: Path) -> Path:
    found = _find_evidence_dir(path)
    if found is not None:
        return found
    raise BundleError(path, f"not a site or evidence folder (neither {MANIFEST} nor {MANIFEST_NAME} in it)")


def open_bundle(path: Path) -> Bundle:
    """Find a bundle (a site folder or its ``evidence/`` folder), read its manifest, and check the
    sha256 of every file it lists; the first missing or mismatching file refuses the bundle."""
    evidence_dir = _evidence_dir(Path(path))
    manifest_path = evidence_dir / MANIFEST_NAME
    manifest = load_json(manifest_path)
    listed = manifest.get("files") if isinstance(manifest, Mapping) else None
    if not isinstance(listed, Mapping):
        raise BundleError(manifest_path, 'no "files" object listing the evidence files')
    files: dict[str, str] = {}
    for rel in sorted(listed):
        entry = listed[rel]
        parts = PurePosixPath(rel).parts
        # Manifest paths are relative to the site root; anything else could point outside the bundle.
        if len(parts) < 2 or parts[0] != EVIDENCE_DIR or ".." in parts or rel.startswith("/"):
            raise BundleError(manifest_path, f"{rel!r} is not a path under {EVIDENCE_DIR}/")
        if not isinstance(entry, Mapping) or not isinstance(entry.get("sha256"), str):
            raise BundleError(manifest_path, f"{rel}: no sha256")
        files[rel] = entry["sha256"]
    bundle = Bundle(evidence_dir, manifest, files)
    for rel, expected in files.items():
        target = bundle.path(rel)
        if not target.is_file():
            raise BundleError(target, f"listed in {manifest_path} but missing; the bundle is refused")
        try:
            actual = sha256_file(target)
        except OSError as exc:
            raise BundleError(target, f"cannot read: {exc.strerror or exc}") from None
        if actual != expected:
            raise BundleError(target, f"sha256 does not match {manifest_path}; the bundle is refused")
    return bundle


def has_manifest(path: Path) -> bool:
    """Whether ``path`` is a site or evidence folder with a manifest (a bundle to open)."""
    return _find_evidence_dir(path) is not None


@dataclass(frozen=True)
class StoredVectors:
    """Vectors an earlier bundle holds, by text sha256, for one embedding configuration."""

    source: Path
    vectors: Mapping[str, np.ndarray]
    #: Rows left out: another configuration, no text hashes (older bundles), or not a finite unit vector.
    skipped: int


def stored_vectors(path: Path, config_sha256: str, dimensions: int) -> StoredVectors:
    """Every vector in the bundle at ``path`` (a site or its ``evidence`` folder) that was embedded with
    ``config_sha256``, keyed by its text's sha256, whichever model folder holds it (``embeddings/`` or a model
    entry's ``embeddings/<model>/``).

    A folder without a manifest gives nothing; a bundle whose files do not match its manifest, or whose
    vector files of this configuration hold anything but float32 rows of ``dimensions``, is refused, so a
    corrupted bundle never feeds a build silently. Another configuration's vectors (another model, of other
    dimensions) are counted as skipped.
    """
    if not has_manifest(path):
        return StoredVectors(path, {}, 0)
    bundle = open_bundle(path)
    vectors: dict[str, np.ndarray] = {}
    skipped = 0
    for rel in bundle.files:
        place = corpus_file(rel)
        matrices = vector_index_files(place[1]) if place is not None else None
        if place is None or matrices is None:
            continue
        index = load_json(bundle.path(rel))
        for key, matrix_name in matrices:
            npy_rel = CorpusFiles(place[0]).at(matrix_name)
            npy_name = PurePosixPath(matrix_name).name
            if npy_rel not in bundle.files:
                if _held_by_reference(bundle, place[0], matrix_name):
                    continue  # withheld (a redacted corpus): nothing to reuse, the texts are embedded again
                raise BundleError(bundle.path(rel), f"names rows of {npy_name}, which the manifest does not list")
            matrix = np.load(io.BytesIO(bundle.path(npy_rel).read_bytes()), allow_pickle=False)
            same_config = isinstance(index, dict) and index.get("config_sha256") == config_sha256
            hashes = index.get("text_sha256") if isinstance(index, dict) else None
            hashes = hashes.get(key) if isinstance(hashes, dict) else hashes
            if not same_config or not isinstance(hashes, list):
                skipped += int(matrix.shape[0]) if matrix.ndim else 0
                continue
            if matrix.dtype != np.dtype("<f4") or matrix.ndim != 2 or matrix.shape[1] != dimensions:
                found = f"{matrix.dtype} rows of shape {matrix.shape}"
                raise BundleError(bundle.path(npy_rel), f"holds {found}; expected float32 x {dimensions}")
            if len(hashes) != matrix.shape[0]:
                problem = f"{len(hashes)} text hashes for {matrix.shape[0]} rows of {npy_name}"
                raise BundleError(bundle.path(rel), problem)
            for text_hash, row in zip(hashes, matrix, strict=True):
                if usable_vector(row, dimensions):
                    vectors.setdefault(str(text_hash), row)
                else:
                    skipped += 1
    return StoredVectors(path, vectors, skipped)


def _held_by_reference(bundle: Bundle, corpus: str, name: str) -> bool:
    """Whether the corpus's ``referenced.json`` holds ``name`` (a name inside its folder) instead of a copy."""
    rel = CorpusFiles(corpus).referenced
    if not bundle.has(rel):
        return False
    files = load_json(bundle.path(rel)).get("files")
    return isinstance(files, Mapping) and name in files
