"""Expected failures reach the user as one line and a non-zero exit, never as a traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sitegen.cli import cli
from tests.helpers import AUDIT_SOURCE

# Runs a copy of audit.py as a script in a Python where ``import numpy`` fails, as on a machine without it.
WITHOUT_NUMPY = """
import runpy, sys

class NoNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoNumpy())
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _clean_exit(result: Result) -> bool:
    """The command ended through click or sys.exit, not through an exception escaping it."""
    return result.exception is None or isinstance(result.exception, SystemExit)


def test_standalone_audit_without_numpy_says_how_to_install_it_and_exits_2(tmp_path: Path) -> None:
    script = Path(shutil.copyfile(AUDIT_SOURCE, tmp_path / "audit.py"))
    (tmp_path / "evidence").mkdir()
    done = subprocess.run(
        [sys.executable, "-I", "-c", WITHOUT_NUMPY, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "audit.py needs numpy: python3 -m pip install numpy\n",
    )


def test_sitegen_audit_of_a_folder_without_evidence_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["audit", str(tmp_path)])
    assert result.exit_code == 2 and _clean_exit(result)
    assert result.output.strip().splitlines()[-1] == (
        f"Error: Invalid value for '[SITE]': {tmp_path} has no evidence/ folder; pass a built site folder"
    )
    assert not (tmp_path / "audit.json").exists()


def test_sitegen_audit_reembed_of_a_site_without_manifest_fails_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "evidence").mkdir()
    result = CliRunner().invoke(cli, ["audit", "--reembed", str(tmp_path)])
    assert result.exit_code == 1 and _clean_exit(result), result.exception
    assert result.output.strip().splitlines()[-1] == (
        "error: cannot re-embed: the bundle failed its manifest check, so its vectors are not trusted"
    )


def test_validate_on_a_file_says_it_is_not_a_corpus_folder(tmp_path: Path) -> None:
    file = tmp_path / "corpus.jsonl"
    file.write_text("{}\n")
    result = CliRunner().invoke(cli, ["validate", str(file)])
    assert result.exit_code == 1 and _clean_exit(result)
    assert result.output.strip().splitlines() == [
        f"error: {file}: is a file; pass the corpus folder that holds corpus.jsonl"
    ]


def test_build_with_a_bad_source_date_epoch_fails_before_any_work_in_one_line(
    tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    out = tmp_path / "site"
    ranked: list[str] = []
    monkeypatch.setattr("sitegen.rankers.bm25.BM25Ranker.rank", lambda self, inputs, depth: ranked.append("bm25"))
    result = CliRunner().invoke(
        cli, ["build", "--corpora", str(tiny_corpus.parent), "--out", str(out), "--ranker", "bm25", "--quiet"]
    )
    assert result.exit_code == 1 and _clean_exit(result), result.exception
    assert result.output.strip().splitlines() == [
        "error: build failed: SOURCE_DATE_EPOCH='yesterday' is not a date in whole seconds since 1970 (e.g. 1735689600)"
    ]
    assert ranked == [] and not out.exists()


def test_build_whose_cache_folder_cannot_be_created_fails_in_one_line(
    tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be\n")
    monkeypatch.setenv("SITEGEN_CACHE", str(blocker))
    out = tmp_path / "site"
    result = CliRunner().invoke(
        cli, ["build", "--corpora", str(tiny_corpus.parent), "--out", str(out), "--ranker", "bm25", "--quiet"]
    )
    assert result.exit_code == 1 and _clean_exit(result), result.exception
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: build failed: ") and str(blocker) in lines[0]
    assert not out.exists()
