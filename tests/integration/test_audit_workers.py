"""A large corpus's experiments check runs in a forked worker beside the other checks: the report is the one a
single process writes, a tampered value included."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sitegen import audit
from sitegen.publish.evidence import write_run
from tests.helpers import copy_site, read_evidence

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the audit forks workers on Linux only")


def checks_of(site: Path) -> list[tuple[str, str, list[str]]]:
    return [(c.name, c.detail, c.mismatches) for c in audit.evidence_checks(audit.Bundle(site))]


def test_the_experiments_check_in_a_worker_reports_what_one_process_reports(
    dense_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = copy_site(dense_site, tmp_path / "site")
    rel = "evidence/tiny/experiments.json"
    experiments = read_evidence(site, rel)
    experiments["scored_questions"] += 1
    (site / rel).write_text(json.dumps(experiments, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    dense_rel = "evidence/tiny/runs/dense.json"
    dense = read_evidence(site, dense_rel)
    last = list(dense["queries"])[-1]  # in the last block of questions, which a worker checks
    dense["queries"][last][0]["score"] += 0.01
    write_run(site / dense_rel, dense)
    monkeypatch.setattr(audit, "DENSE_BATCH", 2)  # blocks of two questions, so that the dense check splits too

    monkeypatch.setattr(audit, "PARALLEL_FROM", 10**18)
    alone = checks_of(site)
    forks: list[int] = []
    child_results = audit._child_results
    monkeypatch.setattr(
        audit, "_child_results", lambda work, part: (forks.append(len(part)), child_results(work, part))[1]
    )
    monkeypatch.setattr(audit, "PARALLEL_FROM", 0)
    monkeypatch.setattr(audit, "_workers", lambda: 2)
    split = checks_of(site)

    assert forks[0] == 1  # the experiments check, in a worker of its own (then the BM25 check's questions)
    assert len(forks) > 1
    assert split == alone
    failed = {name: mismatches for name, _, mismatches in split if mismatches}
    assert any(m.startswith(f"{rel}: scored_questions") for m in failed["experiments:tiny"]), failed
    assert any(m.startswith(f"{dense_rel}: query {last}: rank 1") for m in failed["run:tiny/dense"]), failed


def test_the_pages_split_between_workers_report_what_one_process_reports(
    dense_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = copy_site(dense_site, tmp_path / "site")
    pages = sorted(p for p in site.rglob("*.html") if 'data-ev="' in p.read_text(encoding="utf-8"))
    assert len(pages) >= 2
    for page in (pages[0], pages[-1]):  # two pages far apart, so that more than one worker finds a problem
        text = page.read_text(encoding="utf-8")
        start = text.index('data-ev="')
        shown = text.index(">", start) + 1
        page.write_text(text[:shown] + "9" + text[shown:], encoding="utf-8")
    earlier = audit.evidence_checks(audit.Bundle(site))

    def pages_check() -> list[str]:
        return audit.pages_check(audit.Bundle(site), earlier).mismatches

    monkeypatch.setattr(audit, "PARALLEL_PAGES_FROM", 10**9)
    alone = pages_check()
    monkeypatch.setattr(audit, "PARALLEL_PAGES_FROM", 0)
    monkeypatch.setattr(audit, "_workers", lambda: 2)
    assert pages_check() == alone
    named = [str(p.relative_to(site)) for p in (pages[0], pages[-1])]
    assert all(any(m.startswith(f"{name}:") for m in alone) for name in named), alone
