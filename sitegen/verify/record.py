"""The record of the checks only sitegen can run: ``sitegen audit --reembed --postgres --record FILE``.

The standalone audit recomputes every dense ranking from the stored vectors and checks PostgreSQL's runs as
far as a server-less check can; whether the vectors are what the model gives, and whether the server gives
those runs, needs the model and a server. This record says when that was last checked, with what result and
tolerance, and on which files (their sha256), so a page can show whether it still applies to the bundle it
describes. It is a record of one run on one day, like the benchmark timings: kept beside the corpora
(``verification/last.json``), copied to the site as ``verification.json`` and shown on the Reproducibility
page, outside the evidence manifest (:mod:`sitegen.publish.verification` reads it back). The Pages workflow
attests it with the manifest.

Shape (``"format": "sitegen-verification/1"``)::

    {"date": "YYYY-MM-DD", "format": ..., "manifest_sha256": hex, "sitegen": version, "verdict": "pass"|"fail",
     "audit": {"verdict", "checks", "passed"},
     "reembed": null | {"tolerance", "sample": null|N, "seed": null|int,
                        "corpora": {corpus: {"status": "pass"|"fail"|"not checked", "vectors", "max_abs_diff",
                                             "worst", "weights_match", "not_checked",
                                             "files_sha256": {site path: hex}}}},
     "postgres": null | {"tolerance", "runs": {"corpus/ranker": {"status", "questions", "ids_differ",
                                                                 "max_score_diff", "first_difference", "sha256"}}}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sitegen import __version__
from sitegen.inputs.dates import source_date_epoch
from sitegen.publish.bundle import REEMBED_TOLERANCE
from sitegen.publish.evidence import canonical_json
from sitegen.publish.layout import CorpusFiles
from sitegen.publish.verification import VERIFICATION_FORMAT, file_sha256, vector_files
from sitegen.verify.postgres import SCORE_TOLERANCE, PostgresRerun
from sitegen.verify.reembed import ReembedResult

__all__ = ["verification_record", "write_verification"]


def _today() -> str:
    epoch = source_date_epoch()
    moment = datetime.fromtimestamp(epoch, tz=timezone.utc) if epoch is not None else datetime.now(timezone.utc)
    return moment.date().isoformat()


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
                r.label: {
                    "status": "not checked" if r.not_checked else "pass" if r.ok else "fail",
                    "vectors": r.vectors,
                    "max_abs_diff": r.max_abs_diff,
                    "worst": r.worst,
                    "weights_match": r.weights_match,
                    "not_checked": r.not_checked,
                    "files_sha256": {rel: file_sha256(site, rel) for rel in vector_files(r.label)},
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
                    "sha256": file_sha256(site, CorpusFiles(r.corpus).run(r.ranker)),
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
