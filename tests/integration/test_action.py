"""The reusable Action (action.yml) and the workflows validate against GitHub's schemas, as vendored by
check-jsonschema (offline), and the validation rejects a broken Action."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

ROOT = REPO
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _check_jsonschema(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    """Run check-jsonschema from this interpreter's environment against one of its vendored schemas."""
    executable = Path(sys.executable).with_name("check-jsonschema")
    command = [str(executable)] if executable.exists() else [shutil.which("check-jsonschema") or "check-jsonschema"]
    return subprocess.run(
        [*command, "--builtin-schema", schema, str(path)], capture_output=True, text=True, timeout=120
    )


def test_action_yml_validates_against_the_github_actions_schema() -> None:
    result = _check_jsonschema("vendor.github-actions", ROOT / "action.yml")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_workflow_validates_against_the_github_workflows_schema(workflow: Path) -> None:
    result = _check_jsonschema("vendor.github-workflows", workflow)
    assert result.returncode == 0, result.stdout + result.stderr


def test_there_is_a_workflow_to_validate() -> None:
    assert WORKFLOWS, ".github/workflows holds no workflow"


def test_an_action_step_with_neither_run_nor_uses_is_rejected(tmp_path: Path) -> None:
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    step = '      run: echo "site=$(realpath -m "$OUT")" >> "$GITHUB_OUTPUT"\n'
    assert step in text
    broken = tmp_path / "action.yml"
    broken.write_text(text.replace(step, ""), encoding="utf-8")
    result = _check_jsonschema("vendor.github-actions", broken)
    assert result.returncode != 0
    assert "action.yml" in result.stdout + result.stderr


def test_the_action_installs_from_its_own_checkout_with_the_constraints() -> None:
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    assert "ACTION_PATH: ${{ github.action_path }}" in text
    assert '-c "$ACTION_PATH/constraints.txt"' in text
    assert "--index-url https://download.pytorch.org/whl/cpu" in text
    assert '"$RUNNER_TEMP/audit-venv/bin/python" "$SITE/audit.py" "$SITE"' in text
    assert "actions/upload-pages-artifact@" in text


def test_the_documented_example_workflow_validates(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "ci-and-pages.md").read_text(encoding="utf-8")
    start = page.index("# .github/workflows/retrieval-report.yml")
    block = page[start : page.index("```", start)]
    assert "uses: OWNER/sitegen@" in block
    example = tmp_path / "retrieval-report.yml"
    example.write_text(block, encoding="utf-8")
    result = _check_jsonschema("vendor.github-workflows", example)
    assert result.returncode == 0, result.stdout + result.stderr
