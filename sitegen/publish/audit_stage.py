"""The build's last stage before the swap: audit the new evidence, render the pages with the verdict the
audit must reach, then check the pages; the build fails unless the audit ends as the pages say."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sitegen.errors import BuildError
from sitegen.publish.layout import AUDIT_SCRIPT
from sitegen.publish.pages import render_site, write_page_listing
from sitegen.timer import StageTimer

__all__ = ["audit_and_render"]

Log = Callable[[str], None]


def _audit_failed(checks: Sequence[Any], log: Log) -> BuildError:
    failures = [f"FAIL {c.name}: {c.mismatches[0]}" for c in checks if c.mismatches]
    for line in failures:
        log(line)
    return BuildError(
        f"the audit of the new build failed ({len(failures)} checks); the previous site was kept. "
        f"First failure: {failures[0]}"
    )


def audit_and_render(staging: Path, log: Log, timer: StageTimer) -> dict[str, Any]:
    """Audit the evidence, render the pages with the verdict the full audit must reach, list the pages, then
    run the pages check; the build fails unless the audit, pages check included, ends as the pages say."""
    from sitegen import audit

    with timer.stage("audit"):
        shutil.copyfile(audit.__file__, staging / AUDIT_SCRIPT)
        bundle = audit.Bundle(staging)
        checks = audit.evidence_checks(bundle)
        if any(c.mismatches for c in checks):
            raise _audit_failed(checks, log)
        expected = audit.audit_report(staging, [*checks, audit.expected_pages_check()])
        audit.write_report(staging, expected)  # the badge and verdict table are rendered from it
    with timer.stage("render"):
        render_site(staging)
        write_page_listing(staging)
    with timer.stage("audit"):
        pages = audit.pages_check(bundle, checks)
        if pages.mismatches:
            raise _audit_failed([pages], log)
        if audit.audit_report(staging, [*checks, pages]) != expected:
            raise BuildError("the pages check ended otherwise than the pages say; the previous site was kept")
    counts = expected["counts"]
    log(f"audit: AUDIT PASS: {counts['passed']} of {counts['checks']} checks passed")
    return expected
