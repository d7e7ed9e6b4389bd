"""The record of the checks only sitegen can run: ``sitegen audit --reembed --postgres --record FILE``.

The standalone audit recomputes every dense ranking from the stored vectors and checks PostgreSQL's runs as
far as a server-less check can; whether the vectors are what the model gives, and whether the server gives
those runs, needs the model and a server. This record says when that was last checked, with what result and
tolerance, and on which files (their sha256), so a page can show whether it still applies to the bundle it
describes. It is a record of one run on one day, like the benchmark timings: kept beside the corpora
(``verification/last.json``), copied to the site as ``verification.json``
(:data:`sitegen.publish.layout.VERIFICATION_RECORD`) and shown on the Reproducibility page, outside the
evidence manifest. The Pages workflow attests it with the manifest.

Shape (``"format": "sitegen-verification/1"``)::

    {"date": "YYYY-MM-DD", "format": ..., "manifest_sha256": hex, "sitegen": version, "verdict": "pass"|"fail",
     "audit": {"verdict", "checks", "passed"},
     "reembed": null | {"tolerance", "sample": null|N, "seed": null|int,
                        "corpora": {corpus: {"status": "pass"|"fail"|"not checked", "vectors", "max_abs_diff",
                                             "worst", "weights_match", "not_checked", "files_sha256": {path: hex}}}},
     "postgres": null | {"tolerance", "runs": {"corpus/ranker": {"status", "questions", "ids_differ",
                                                                 "max_score_diff", "first_difference", "sha256"}}}}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sitegen import __version__
from sitegen.errors import BuildError
from sitegen.hashing import sha256_file
from sitegen.inputs.dates import source_date_epoch
from sitegen.publish.bundle import REEMBED_TOLERANCE
from sitegen.publish.evidence import canonical_json
from sitegen.publish.layout import PASSAGE_VECTORS, QUERY_VECTORS, CorpusFiles, run_file
from sitegen.verify.postgres import SCORE_TOLERANCE, PostgresRerun
from sitegen.verify.reembed import ReembedResult

__all__ = [
    "DEFAULT_RECORD",
    "VERIFICATION_FORMAT",
    "Verification",
    "read_verification",
    "verification_record",
    "write_verification",
]

VERIFICATION_FORMAT = "sitegen-verification/1"
DEFAULT_RECORD = Path("verification") / "last.json"  # beside the corpora folder
_VECTOR_FILES = (PASSAGE_VECTORS, QUERY_VECTORS)


def _today() -> str:
    epoch = source_date_epoch()
    moment = datetime.fromtimestamp(epoch, tz=timezone.utc) if epoch is not None else datetime.now(timezone.utc)
    return moment.date().isoformat()


def _evidence_sha256(site: Path, corpus: str, name: str) -> str | None:
    path = site / CorpusFiles(corpus).at(name)
    return sha256_file(path) if path.is_file() else None


def verification_record(
    site: Path,
    audit: Mapping[str, Any],
    reembed: tuple[Sequence[ReembedResult], int | None, int | None] | None,
    postgres: Sequence[PostgresRerun] | None,
) -> dict[str, Any]:
    """The record of one ``sitegen audit`` run: its standalone ``audit`` report, the ``reembed`` results with
    the sample size and seed (None: not asked for) and the ``postgres`` reruns (None: not asked for)."""
    record: dict[str, Any] = {
        "format": VERIFICATION_FORMAT,
        "date": _today(),
        "sitegen": __version__,
        "manifest_sha256": audit.get("manifest_sha256"),
        "audit": {
            "verdict": audit["verdict"],
            "checks": audit["counts"]["checks"],
            "passed": audit["counts"]["passed"],
        },
        "reembed": None,
        "postgres": None,
    }
    ok = audit["verdict"] == "pass"
    if reembed is not None:
        results, sample, seed = reembed
        record["reembed"] = {
            "tolerance": REEMBED_TOLERANCE,
            "sample": sample,
            "seed": seed,
            "corpora": {
                r.corpus: {
                    "status": "not checked" if r.not_checked else "pass" if r.ok else "fail",
                    "vectors": r.vectors,
                    "max_abs_diff": r.max_abs_diff,
                    "worst": r.worst,
                    "weights_match": r.weights_match,
                    "not_checked": r.not_checked,
                    "files_sha256": {n: _evidence_sha256(site, r.corpus, n) for n in _VECTOR_FILES},
                }
                for r in results
            },
        }
        ok = ok and all(r.ok for r in results)
    if postgres is not None:
        record["postgres"] = {
            "tolerance": SCORE_TOLERANCE,
            "runs": {
                f"{r.corpus}/{r.ranker}": {
                    "status": "pass" if r.ok else "fail",
                    "questions": r.questions,
                    "ids_differ": r.ids_differ,
                    "max_score_diff": r.max_score_diff,
                    "first_difference": r.first_difference,
                    "sha256": _evidence_sha256(site, r.corpus, run_file(r.ranker)),
                }
                for r in postgres
            },
        }
        ok = ok and all(r.ok for r in postgres)
    record["verdict"] = "pass" if ok else "fail"
    return record


def write_verification(path: Path, record: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(canonical_json(record))


@dataclass(frozen=True)
class Verification:
    """A record as a page shows it, held against the bundle being built: each part applies only while the
    files it checked are still the bundle's (same sha256)."""

    record: Mapping[str, Any]
    #: Per corpus (reembed) and per corpus/ranker (postgres): whether the checked files are this bundle's.
    current: Mapping[str, bool]

    @property
    def stale(self) -> list[str]:
        return sorted(name for name, same in self.current.items() if not same)


def read_verification(path: Path, site: Path) -> Verification | None:
    """The record at ``path`` held against the bundle under ``site``, or None when there is none; a file that
    is not a verification record is a BuildError naming it."""
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
        current[f"reembed:{corpus}"] = all(_evidence_sha256(site, corpus, n) == files.get(n) for n in _VECTOR_FILES)
    for name, entry in ((record.get("postgres") or {}).get("runs") or {}).items():
        corpus, _, ranker = name.partition("/")
        current[f"postgres:{name}"] = _evidence_sha256(site, corpus, run_file(ranker)) == entry.get("sha256")
    return Verification(record, current)
