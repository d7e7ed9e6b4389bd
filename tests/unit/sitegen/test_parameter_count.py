"""No function in sitegen takes more than six parameters (the style rule): read from the source, so a seventh fails
here before review. Two exemptions, each by rule: the standalone ``sitegen/audit.py``, which shares no code with
sitegen and keeps its own shape, and click commands (a function under ``@<group>.command(...)``,
``@click.command(...)`` or ``@click.group(...)``), whose parameters are the command's options, declared one
decorator each. ``self`` and ``cls`` of a method are not counted; ``*args`` and ``**kwargs`` count one each."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO

MAX_PARAMETERS = 6
EXEMPT_FILES = {Path("sitegen/audit.py")}


def _is_click_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr in ("command", "group"):
            return True
    return False


def _counted(node: ast.FunctionDef | ast.AsyncFunctionDef, in_class: bool) -> int:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    if in_class and not static and names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (args.vararg is not None) + (args.kwarg is not None)


def too_many_parameters(source: str, name: str) -> list[str]:
    """``file:line function (n parameters)`` for each function in ``source`` over the limit, click commands
    exempt."""
    found = []

    def visit(node: ast.AST, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _counted(child, in_class)
                if n > MAX_PARAMETERS and not _is_click_command(child):
                    found.append(f"{name}:{child.lineno} {child.name} ({n} parameters)")
                visit(child, False)
            else:
                visit(child, isinstance(child, ast.ClassDef))

    visit(ast.parse(source), False)
    return found


def test_no_function_in_sitegen_takes_more_than_six_parameters() -> None:
    found = []
    for path in sorted((REPO / "sitegen").rglob("*.py")):
        rel = path.relative_to(REPO)
        if rel not in EXEMPT_FILES:
            found += too_many_parameters(path.read_text(encoding="utf-8"), rel.as_posix())
    assert found == []


def test_the_count_flags_a_seventh_parameter_and_exempts_only_click_commands_and_self() -> None:
    source = """
import click

def six(a, b, c, d, e, f): ...
def seven(a, b, c, *, d, e, f, g): ...
def starred(a, b, c, d, e, *args, **kwargs): ...

class Ranker:
    def __init__(self, a, b, c, d, e, f): ...
    @staticmethod
    def helper(self, a, b, c, d, e, f): ...

@click.command("build")
@click.option("--a")
def build(a, b, c, d, e, f, g, h): ...

@group.command()
def sub(a, b, c, d, e, f, g): ...

@other_decorator
def decorated(a, b, c, d, e, f, g): ...
"""
    assert too_many_parameters(source, "x.py") == [
        "x.py:5 seven (7 parameters)",
        "x.py:6 starred (7 parameters)",
        "x.py:11 helper (7 parameters)",
        "x.py:21 decorated (7 parameters)",
    ]
