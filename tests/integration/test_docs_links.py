"""The README, docs/*.md and bench/README.md point only at what exists.

Every relative link resolves to a file in the repository, and an ``#anchor`` to a heading of that file by GitHub's
anchor rule; every ``sitegen ...`` command shown in code (fenced blocks and inline spans) is a command of the click
group, sub-command included, and every option written after it is one of that command's options; every repository
path (``sitegen/...``, ``tests/...``, ``bench/...``) and every ``sitegen.`` module or name the code shows exists. The
checks are pure functions of a folder, so the tests at the end plant each kind of mistake in a copy and see it fail.
"""

from __future__ import annotations

import ast
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from sitegen.cli import cli
from tests.helpers import REPO

README_LIMIT = 300  # lines; issue #29: what sitegen is, set-up, tutorial, commands, where to read more

_FENCE = re.compile(r"^\s*(```+|~~~+)\s*(\S*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")
_PATH = re.compile(r"(?<![\w./-])((?:sitegen|tests|bench|templates|\.ci)/[\w./-]*)")  # folders of this repository
_MODULE = re.compile(r"(?<![\w./-])(sitegen(?:\.(?!toml\b|json\b)[A-Za-z_]\w*)+)")
_SHELL_BREAKS = {"&&", "||", ";", "|", ">", ">>", "<"}


@dataclass(frozen=True)
class Code:
    """One piece of code a page shows: a fenced block or an inline span, with the line it starts on."""

    path: Path
    line: int
    text: str
    language: str  # the fence's info string; "" for inline spans and bare fences


@dataclass(frozen=True)
class Page:
    """A Markdown file split into the prose a reader sees (links, headings, inline code) and its fenced blocks."""

    path: Path
    prose: str  # fenced lines blanked, so offsets still map to line numbers
    blocks: tuple[Code, ...]

    def line_of(self, offset: int) -> int:
        return self.prose.count("\n", 0, offset) + 1

    def spans(self) -> Iterator[Code]:
        for match in _CODE_SPAN.finditer(self.prose):
            yield Code(self.path, self.line_of(match.start()), match.group(2).replace("\\|", "|"), "")

    def code(self) -> Iterator[Code]:
        yield from self.blocks
        yield from self.spans()


def doc_files(root: Path) -> list[Path]:
    """The documentation the checks cover: the README, every page in docs/, and the benchmark log."""
    files = [root / "README.md", *sorted((root / "docs").glob("*.md")), root / "bench" / "README.md"]
    return [f for f in files if f.is_file()]


def read_page(path: Path) -> Page:
    prose: list[str] = []
    blocks: list[Code] = []
    fence: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence, language, start, body = opened.group(1), opened.group(2), number, []
            prose.append("")
        elif fence is not None and line.strip().startswith(fence[0] * len(fence)) and not line.strip(fence[0]).strip():
            blocks.append(Code(path, start + 1, "\n".join(body), language))
            fence = None
            prose.append("")
        elif fence is not None:
            body.append(line)
            prose.append("")
        else:
            prose.append(line)
    return Page(path, "\n".join(prose), tuple(blocks))


def github_anchor(heading: str) -> str:
    """GitHub's heading id: the rendered text lowercased, punctuation dropped (letters, digits, ``_``, ``-`` and
    spaces kept), each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"[`*]", "", text)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Page) -> set[str]:
    """Every heading's id; a repeated one gets -1, -2, ... as GitHub numbers them."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in page.prose.splitlines():
        match = _HEADING.match(line)
        if match:
            slug = github_anchor(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def _where(root: Path, path: Path, line: int) -> str:
    return f"{path.relative_to(root)}:{line}"


def _in_order(problems: list[str]) -> list[str]:
    """Problems by file, then line, as an editor lists them; within a line, in the order found."""

    def key(problem: str) -> tuple[str, int]:
        file, line, _ = problem.split(":", 2)
        return file, int(line)

    return sorted(problems, key=key)


def link_problems(root: Path) -> list[str]:
    """Relative links that name a missing file, leave the repository, or name a heading the file lacks."""
    pages = {p.resolve(): read_page(p) for p in doc_files(root)}
    problems = []
    for page in pages.values():
        path = page.path
        prose = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), page.prose)  # links inside code are not links
        for match in _LINK.finditer(prose):
            target = match.group(1)
            if _SCHEME.match(target):
                continue
            where = _where(root, path, page.line_of(match.start()))
            file_part, _, fragment = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path.resolve()
            if not resolved.is_relative_to(root.resolve()):
                problems.append(f"{where}: link {target} leaves the repository")
            elif not resolved.exists():
                problems.append(f"{where}: link {target}: no such file")
            elif fragment and resolved.suffix == ".md":
                linked = pages.get(resolved) or read_page(resolved)
                if fragment not in anchors(linked):
                    problems.append(f"{where}: link {target}: {resolved.name} has no heading #{fragment}")
    return _in_order(problems)


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote in prose-like code: plain words still name the command
        return text.split()


def _logical_lines(code: Code) -> Iterator[tuple[int, str]]:
    """The code's lines with shell continuations (a trailing backslash) joined, each with the line it starts on."""
    pending, start = "", code.line
    for number, line in enumerate(code.text.splitlines(), start=code.line):
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield start, pending + line
        pending = ""
    if pending:
        yield start, pending


def invocations(code: Code) -> Iterator[tuple[int, list[str]]]:
    """Each ``sitegen`` command in the code, as the words after ``sitegen`` up to a shell operator. A command starts
    a line, follows a shell operator or a YAML key (``run: sitegen ...``); ``sitegen`` inside a sentence is prose."""
    for line, text in _logical_lines(code):
        words = _tokens(text)
        for i, word in enumerate(words):
            starts_command = i == 0 or words[i - 1] in _SHELL_BREAKS or words[i - 1].endswith(":")
            if (word == "sitegen" or word.endswith("/sitegen")) and starts_command:
                rest = []
                for arg in words[i + 1 :]:
                    if arg in _SHELL_BREAKS:
                        break
                    rest.append(arg)
                yield line, rest


def _option_names(command: click.Command) -> set[str]:
    names = {"--help"}
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


def command_problem(args: list[str]) -> str | None:
    """Why ``sitegen ARGS`` is not a command of the CLI with real options, or None. ``a|b`` names alternatives."""
    commands: list[click.Command] = [cli]
    shown = ["sitegen"]
    rest = list(args)
    while isinstance(commands[0], click.Group) and rest and not rest[0].startswith("-"):
        group = commands[0]
        names = rest.pop(0).split("|")
        unknown = [n for n in names if n not in group.commands]
        if unknown:
            known = ", ".join(sorted(group.commands))
            return f"`{' '.join(shown)} {unknown[0]}` is not a command (known: {known})"
        commands = [group.commands[n] for n in names]
        shown.append("|".join(names))
    for word in rest:
        option = word.strip("[]()").split("=", 1)[0]
        if not re.fullmatch(r"--?[A-Za-z][\w-]*", option):
            continue
        for command in commands:
            if option not in _option_names(command):
                return f"`{' '.join(shown)}` has no option {option}"
    return None


def command_problems(root: Path) -> list[str]:
    problems = []
    for path in doc_files(root):
        for code in read_page(path).code():
            for line, args in invocations(code):
                problem = command_problem(args)
                if problem:
                    problems.append(f"{_where(root, path, line)}: {problem}")
    return _in_order(problems)


def _module_file(root: Path, dotted: str) -> Path | None:
    base = root.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _defined_names(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def module_problem(root: Path, dotted: str) -> str | None:
    """Why ``sitegen.a.b[.name[.attr]]`` names nothing in the source tree, or None (read with ast, not imported)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        source = _module_file(root, ".".join(parts[:cut]))
        if source is None:
            continue
        body = ast.parse(source.read_text(encoding="utf-8")).body
        for name in parts[cut:]:
            if name not in _defined_names(body):
                return f"{dotted}: {'.'.join(parts[:cut])} defines no {name}"
            classes = [n for n in body if isinstance(n, ast.ClassDef) and n.name == name]
            body = classes[0].body if classes else []
        return None
    return f"{dotted}: no such module"


def _imports_from_sitegen(code: Code) -> Iterator[str]:
    if code.language not in ("python", "py"):
        return
    try:
        tree = ast.parse(code.text)
    except SyntaxError as error:
        yield f"<a Python block that does not parse: {error.msg}>"
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sitegen":
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def reference_problems(root: Path) -> list[str]:
    """Repository paths and ``sitegen.`` modules or names shown in code that do not exist."""
    problems = []
    for path in doc_files(root):
        for code in read_page(path).code():
            for offset, line in enumerate(code.text.splitlines()):
                where = _where(root, path, code.line + offset)
                for match in _PATH.finditer(line):
                    shown = match.group(1).rstrip(".")
                    if not (root / shown).exists():
                        problems.append(f"{where}: {shown}: no such file or folder")
                for match in _MODULE.finditer(line):
                    problem = module_problem(root, match.group(1).rstrip("."))
                    if problem:
                        problems.append(f"{where}: {problem}")
            for dotted in _imports_from_sitegen(code):
                problem = dotted if dotted.startswith("<") else module_problem(root, dotted)
                if problem:
                    problems.append(f"{_where(root, path, code.line)}: {problem}")
    return _in_order(problems)


# The documentation as committed.


def test_every_relative_link_in_the_docs_resolves_to_a_file_and_heading() -> None:
    assert link_problems(REPO) == []


def test_every_sitegen_command_and_option_the_docs_show_exists() -> None:
    assert command_problems(REPO) == []


def test_every_repository_path_and_module_the_docs_name_exists() -> None:
    assert reference_problems(REPO) == []


def test_the_checks_cover_the_readme_every_docs_page_and_the_benchmark_log() -> None:
    files = {p.relative_to(REPO).as_posix() for p in doc_files(REPO)}
    assert {"README.md", "docs/README.md", "bench/README.md", "docs/commands.md"} <= files
    shown = [args for p in doc_files(REPO) for c in read_page(p).code() for _, args in invocations(c)]
    assert len(shown) > 50  # the commands really are found, not silently skipped


def test_the_readme_keeps_to_the_essentials_within_300_lines() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_LIMIT
    assert ["Set-up", "Commands", "Where to read more"] == [
        h for h in re.findall(r"^## (.+)$", text, re.M) if not h.startswith("Five-minute tutorial")
    ]


def test_the_docs_index_links_every_docs_page() -> None:
    index = read_page(REPO / "docs" / "README.md").prose
    linked = {m.group(1).partition("#")[0] for m in _LINK.finditer(index)}
    pages = {p.name for p in (REPO / "docs").glob("*.md")} - {"README.md"}
    assert pages and pages <= linked, sorted(pages - linked)


def test_the_readme_links_every_docs_page() -> None:
    readme = read_page(REPO / "README.md").prose
    linked = {m.group(1).partition("#")[0] for m in _LINK.finditer(readme)}
    pages = {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")}
    assert pages and pages <= linked, sorted(pages - linked)


def _section(text: str, path: tuple[str, ...]) -> str:
    """The text under the docs/commands.md heading that names the longest prefix of ``sitegen PATH``."""
    for cut in range(len(path), 0, -1):
        heading = f"## `sitegen {' '.join(path[:cut])}`\n"
        if heading in text:
            return text.split(heading, 1)[1].split("\n## ", 1)[0]
    raise AssertionError(f"docs/commands.md has no section for sitegen {' '.join(path)}")


def _leaf_commands() -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(cli.commands.items()):
        if isinstance(command, click.Group):
            yield from (((name, sub), leaf) for sub, leaf in sorted(command.commands.items()))
        else:
            yield (name,), command


@pytest.mark.parametrize(
    ("path", "command"), [pytest.param(path, command, id=" ".join(path)) for path, command in _leaf_commands()]
)
def test_the_commands_page_documents_every_option(path: tuple[str, ...], command: click.Command) -> None:
    section = _section((REPO / "docs" / "commands.md").read_text(encoding="utf-8"), path)
    for param in command.params:
        if isinstance(param, click.Option):
            long_name = max(param.opts, key=len)
            assert long_name in section, f"sitegen {' '.join(path)} {long_name}"


# The checks fail on planted mistakes.


def _docs_copy(tmp_path: Path) -> Path:
    """A copy of the documentation and the package source, to plant mistakes in."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "docs", root / "docs")
    shutil.copytree(REPO / "sitegen", root / "sitegen", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "README.md", root / "README.md")
    return root


def _planted(problems: list[str]) -> list[str]:
    return [p for p in problems if p.startswith("docs/planted.md:")]


def test_github_anchor_rule_drops_punctuation_and_keeps_hyphens() -> None:
    assert github_anchor("Project configuration: `sitegen.toml`") == "project-configuration-sitegentoml"
    assert github_anchor("Rerunning it: `sitegen audit --postgres`") == "rerunning-it-sitegen-audit---postgres"
    assert github_anchor("100,000 passages x 1,000 questions") == "100000-passages-x-1000-questions"
    assert github_anchor("Ties in [RRF](fusion.md) and *BM25*") == "ties-in-rrf-and-bm25"
    assert github_anchor("Ünïcode ids_and more") == "ünïcode-ids_and-more"


def test_a_repeated_heading_gets_a_numbered_anchor(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# Notes\n\n## Notes\n\n```sh\n# Notes\n```\n", encoding="utf-8")
    assert anchors(read_page(page)) == {"notes", "notes-1"}  # the comment in the code block is no heading


def test_a_planted_missing_file_or_heading_is_reported_with_file_and_line(tmp_path: Path) -> None:
    root = _docs_copy(tmp_path)
    page = root / "docs" / "planted.md"
    page.write_text(
        "# Planted\n\nGood: [metrics](metrics.md#tie-aware-values), [top](#planted), [site](https://example.org/x).\n"
        "Bad: [gone](no-such-page.md) and\n[wrong anchor](metrics.md#no-such-heading), [self](#nowhere).\n"
        "Not links: `[code](missing.md)` and\n\n```\n[block](missing.md)\n```\n[up](../../outside.md)\n",
        encoding="utf-8",
    )
    assert _planted(link_problems(root)) == [
        "docs/planted.md:4: link no-such-page.md: no such file",
        "docs/planted.md:5: link metrics.md#no-such-heading: metrics.md has no heading #no-such-heading",
        "docs/planted.md:5: link #nowhere: planted.md has no heading #nowhere",
        "docs/planted.md:11: link ../../outside.md leaves the repository",
    ]


def test_a_planted_unknown_command_or_option_is_reported(tmp_path: Path) -> None:
    root = _docs_copy(tmp_path)
    (root / "docs" / "planted.md").write_text(
        "# Planted\n\nFine: `sitegen gate check FILE SITE --json`, `sitegen import beir|trec|smart --to DIR`.\n\n"
        "```sh\nsitegen bild --out x\n.venv/bin/sitegen gate chek gate.json site\n"
        "sitegen build --only a \\\n    --no-such-option && pytest --no-such-option\n"
        "sitegen import beir|trec --split dev\n```\n\nInline: `sitegen diff A B [--tolerence 0.1]`.\n",
        encoding="utf-8",
    )
    assert _planted(command_problems(root)) == [
        "docs/planted.md:6: `sitegen bild` is not a command (known: " + ", ".join(sorted(cli.commands)) + ")",
        "docs/planted.md:7: `sitegen gate chek` is not a command (known: check, record)",
        "docs/planted.md:8: `sitegen build` has no option --no-such-option",
        "docs/planted.md:10: `sitegen import beir|trec` has no option --split",
        "docs/planted.md:13: `sitegen diff` has no option --tolerence",
    ]


def test_a_planted_missing_path_or_module_is_reported(tmp_path: Path) -> None:
    root = _docs_copy(tmp_path)
    (root / "docs" / "planted.md").write_text(
        "# Planted\n\nFine: `sitegen/cli/__init__.py`, `sitegen.toml`, `sitegen.cli.cli`.\n"
        "Gone: `tests/test_no_such_file.py`, `sitegen.rankers.no_such_module`, `sitegen.cli.no_such_name`.\n\n"
        "```python\nfrom sitegen.cli import cli, nothing_here\n```\n",
        encoding="utf-8",
    )
    assert _planted(reference_problems(root)) == [
        "docs/planted.md:4: tests/test_no_such_file.py: no such file or folder",
        "docs/planted.md:4: sitegen.rankers.no_such_module: sitegen.rankers defines no no_such_module",
        "docs/planted.md:4: sitegen.cli.no_such_name: sitegen.cli defines no no_such_name",
        "docs/planted.md:7: sitegen.cli.nothing_here: sitegen.cli defines no nothing_here",
    ]
