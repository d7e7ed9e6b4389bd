"""Every command has help, the README lists it, and the code stays ruff clean (docs/: tests/test_docs_links.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from tests.helpers import REPO

COMMANDS = sorted(cli.commands)
LEAF_COMMANDS = sorted(
    (name, *([sub] if sub else []))
    for name, command in cli.commands.items()
    for sub in (sorted(command.commands) if isinstance(command, click.Group) else [None])
)


@pytest.mark.parametrize("path", LEAF_COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output
    command = cli
    for name in path:
        command = command.commands[name]
    for param in command.params:
        if param.param_type_name == "option":
            assert param.help, f"{' '.join(path)} {param.name} has no help"


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_documents_every_command(command: str) -> None:
    assert f"`sitegen {command}" in (REPO / "README.md").read_text()


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one() -> None:
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.+?)\n```", setup)
    assert len(commands) == 2
    assert commands[0].endswith("sitegen build") and commands[1].endswith("pytest")
    assert commands[1] in (REPO / ".ci" / "run").read_text()


def test_version_option_reports_the_package_version() -> None:
    from sitegen import __version__

    assert __version__ in CliRunner().invoke(cli, ["--version"]).output


def test_rankers_command_lists_the_registry() -> None:
    from sitegen.rankers import RANKERS

    output = CliRunner().invoke(cli, ["rankers"]).output
    lines = output.splitlines()
    assert lines[0].split() == ["ranker", "family", "key", "parameters"]
    assert [line.split()[0] for line in lines[1:]] == list(RANKERS)
    assert "vectors of sentence-transformers/all-MiniLM-L6-v2" in next(ln for ln in lines if ln.startswith("dense "))
    assert "stop_words" not in output  # the stop list is counted, not printed
    as_json = [json.loads(line) for line in CliRunner().invoke(cli, ["rankers", "--json"]).output.splitlines()]
    assert [r["name"] for r in as_json] == list(RANKERS)
    assert as_json[0]["contract"]["family"] == "lexical" and "k1" in as_json[0]["params"]


def test_code_is_ruff_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "sitegen", "tests"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_core_modules_never_import_click() -> None:
    def in_cli(path: Path) -> bool:  # the sitegen.cli package, the only place click belongs
        return path.relative_to(REPO / "sitegen").parts[0] == "cli"

    for path in (REPO / "sitegen").rglob("*.py"):
        if not in_cli(path):
            assert "import click" not in path.read_text(), path
    # Nor through another module: importing every core module in a fresh interpreter leaves click unloaded.
    modules = sorted(
        ".".join(p.relative_to(REPO).with_suffix("").parts)
        for p in (REPO / "sitegen").rglob("*.py")
        if not in_cli(p) and p.name != "__main__.py"
    )
    probe = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules)
    probe += "print(sorted(m for m in sys.modules if m == 'click' or m.startswith('click.')))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout


def test_results_page_tables_match_the_committed_evidence() -> None:
    """docs/results.md quotes the payments-support tables as built; a rebuild that changes them must update it."""
    import json

    base = REPO / "site" / "evidence" / "payments-support"
    metrics = json.loads((base / "metrics.json").read_text())
    report = json.loads((base / "report.json").read_text())
    results = (REPO / "docs" / "results.md").read_text().split("# Results: payments-support", 1)[1]
    n = report["questions"]["overall"]
    for ranker, scored in metrics.items():
        overall, counts = scored["overall"], report["hit_counts"]["overall"][ranker]
        row = (
            f"| `{ranker}` | {overall['hit@1']:.3f} ({counts['hit@1']}/{n}) | "
            f"{overall['hit@5']:.3f} ({counts['hit@5']}/{n}) | {overall['mrr@10']:.3f} |"
        )
        assert row in results, row
        kinds = ("exact-code", "exact-id", "paraphrase", "code-plus-words")
        cells = " | ".join(
            " / ".join(f"{scored['by_kind'][k][m]:.3f}" for m in ("hit@1", "hit@5", "mrr@10")) for k in kinds
        )
        assert f"| `{ranker}` | {cells} |" in results, ranker
