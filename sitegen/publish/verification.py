"""The last verification with the model and PostgreSQL, as the site shows it (written by
:mod:`sitegen.verify.record`: ``sitegen audit --reembed --postgres --record FILE``).

A build copies the record kept beside the corpora (``verification/last.json``) to the site as
``verification.json``, outside the evidence manifest like the benchmark timings, and the Reproducibility page
shows it held against the bundle being built: each part applies only while the files it checked are still the
bundle's (the same sha256).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitegen.errors import BuildError
from sitegen.hashing import sha256_file
from sitegen.publish.layout import CorpusFiles

__all__ = ["DEFAULT_RECORD", "VERIFICATION_FORMAT", "Verification", "file_sha256", "read_verification", "vector_files"]

VERIFICATION_FORMAT = "sitegen-verification/1"
#: Where a project keeps its record, beside the corpora folder.
DEFAULT_RECORD = Path("verification") / "last.json"


def vector_files(corpus: str) -> tuple[str, str]:
    """The site paths of a corpus's stored vectors, the files a re-embedding checks: ``corpus`` is a corpus name
    (``dense``'s vectors) or ``corpus/entry`` (a model entry's own, in ``embeddings/<entry>/``)."""
    name, _, model = corpus.partition("/")
    _, passages, queries = CorpusFiles(name).model_vectors(model or None)
    return passages, queries


def file_sha256(site: Path, rel: str) -> str | None:
    """sha256 of the site file ``rel``, None when it is absent."""
    return sha256_file(site / rel) if (site / rel).is_file() else None


@dataclass(frozen=True)
class Verification:
    """A record held against a bundle: ``current`` says, per ``reembed:<corpus>`` and
    ``postgres:<corpus>/<ranker>``, whether the files that part checked are this bundle's."""

    record: Mapping[str, Any]
    current: Mapping[str, bool]

    @property
    def stale(self) -> list[str]:
        return sorted(name for name, same in self.current.items() if not same)


def read_verification(path: Path, site: Path) -> Verification | None:
    """The record at ``path`` held against the bundle under ``site``; None when there is none. A file that is
    not a verification record is a BuildError naming it."""
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BuildError(f"{path}: not a readable verification record ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != VERIFICATION_FORMAT:
        raise BuildError(f"{path}: not a sitegen verification record (format {VERIFICATION_FORMAT})")
    current: dict[str, bool] = {}
    for corpus, entry in ((record.get("reembed") or {}).get("corpora") or {}).items():
        files = entry.get("files_sha256") or {}
        current[f"reembed:{corpus}"] = all(file_sha256(site, rel) == files.get(rel) for rel in vector_files(corpus))
    for name, entry in ((record.get("postgres") or {}).get("runs") or {}).items():
        corpus, _, ranker = name.partition("/")
        current[f"postgres:{name}"] = file_sha256(site, CorpusFiles(corpus).run(ranker)) == entry.get("sha256")
    return Verification(record, current)
