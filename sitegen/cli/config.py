"""``sitegen.toml``: the project configuration ``sitegen build`` reads from the current folder, so that a plain
``sitegen build`` rebuilds someone's report without knowing their flags. Command-line flags override it.

Every key is optional; an unknown key or a value of the wrong type is an error naming the file, the line and
the key, since a misspelt key that were ignored would silently build a different report.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from sitegen.cli.common import _ExternalRun, _Retriever
from sitegen.embedding.models import ModelEntryError, ModelSpec, parse_model_entries
from sitegen.errors import SitegenError

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, before it joined the standard library
    import tomli as tomllib

__all__ = ["CONFIG_FILE", "ConfigError", "ProjectConfig", "load_config"]

CONFIG_FILE = "sitegen.toml"


class ConfigError(SitegenError):
    """A ``sitegen.toml`` that cannot be used, located to its line where possible."""

    def __init__(self, path: Path, problem: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class ProjectConfig:
    """The values a ``sitegen.toml`` sets; None or () where it is silent, so the flag's default applies."""

    title: str | None = None
    description: str | None = None
    corpora: Path | None = None
    out: Path | None = None
    only: tuple[str, ...] = ()
    rankers: tuple[str, ...] = ()
    runs: tuple[tuple[str, str, Path], ...] = ()
    retrievers: tuple[tuple[str, str], ...] = ()
    #: ``[[models]]``: each a dense ranker (:class:`sitegen.embedding.models.ModelSpec`).
    models: tuple[ModelSpec, ...] = ()


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _strings(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(value)
    return None


# key -> (what a valid value is, in words; the check, which returns None for a wrong value)
_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "title": ("a nonempty string", _string),
    "description": ("a nonempty string", _string),
    "corpora": ("a folder path (a string)", _string),
    "out": ("a folder path (a string)", _string),
    "only": ("a list of corpus names (strings)", _strings),
    "rankers": ("a list of ranker names (strings)", _strings),
    "runs": ('a list of "NAME=CORPUS:PATH" strings', _strings),
    "retrievers": ('a list of "NAME=module:callable" strings', _strings),
    "models": ("[[models]] tables, each with name and model", lambda v: v if isinstance(v, list) else None),
}


def _line_of(text: str, key: str) -> int | None:
    """The line that sets top-level ``key`` (bare or quoted, or as a ``[key]`` table), for the error message."""
    name = rf"""(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')"""
    pattern = re.compile(rf"^\s*(?:{name}\s*[=.]|\[\[?\s*{name}\s*[\].])")
    return next((n for n, line in enumerate(text.splitlines(), 1) if pattern.match(line)), None)


def load_config(path: Path) -> ProjectConfig:
    """Read and check ``path``; raise :class:`ConfigError` naming the file, line and key on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(path, "not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(path, exc.strerror or str(exc)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        problem = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise ConfigError(path, f"not valid TOML: {problem}", int(match.group(1)) if match else None) from None
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in _KEYS:
            known = ", ".join(_KEYS)
            raise ConfigError(path, f"unknown key {key!r} (known keys: {known})", _line_of(text, key))
        expected, check = _KEYS[key]
        checked = check(value)
        if checked is None:
            raise ConfigError(path, f"{key} must be {expected}, got {value!r}", _line_of(text, key))
        values[key] = checked
    parsed: dict[str, tuple[Any, ...]] = {}
    for key, kind in (("runs", _ExternalRun()), ("retrievers", _Retriever())):
        try:  # the flags' own parsers: one syntax, one message, whichever way it is given
            parsed[key] = tuple(kind.convert(v, None, None) for v in values.get(key, ()))
        except click.BadParameter as exc:
            raise ConfigError(path, f"{key}: {exc.message}", _line_of(text, key)) from None
    runs, retrievers = parsed["runs"], parsed["retrievers"]
    models = _models(path, text, values.get("models", []))
    return ProjectConfig(
        title=values.get("title"),
        description=values.get("description"),
        corpora=Path(values["corpora"]) if "corpora" in values else None,
        out=Path(values["out"]) if "out" in values else None,
        only=values.get("only", ()),
        rankers=values.get("rankers", ()),
        runs=runs,
        retrievers=retrievers,
        models=models,
    )


def _models(path: Path, text: str, raw: list[Any]) -> tuple[ModelSpec, ...]:
    """The ``[[models]]`` entries, checked one by one so an error names the line of the entry that has it."""
    headers = [n for n, line in enumerate(text.splitlines(), 1) if re.match(r"^\s*\[\[\s*models\s*\]\]", line)]
    for number in range(1, len(raw) + 1):
        try:
            parse_model_entries(raw[:number])
        except ModelEntryError as exc:
            line = headers[number - 1] if number <= len(headers) else _line_of(text, "models")
            raise ConfigError(path, str(exc), line) from None
    return parse_model_entries(raw)


#: ``sitegen build``'s parameter -> the ``ProjectConfig`` field that supplies it when the flag is not given.
BUILD_PARAMETERS = {
    "corpora_dir": "corpora",
    "out_dir": "out",
    "only": "only",
    "ranker_names": "rankers",
    "external_runs": "runs",
    "retrievers": "retrievers",
    "title": "title",
    "description": "description",
    "models": "models",
}


def apply_config(config: ProjectConfig, ctx: click.Context, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (the command's parameters) with each one the command line left at its default taken from
    ``config`` where it sets it: flags override the file, the file overrides the defaults."""
    merged = dict(values)
    for parameter, field_name in BUILD_PARAMETERS.items():
        setting = getattr(config, field_name)
        given = ctx.get_parameter_source(parameter) not in (None, click.core.ParameterSource.DEFAULT)
        if setting not in (None, ()) and not given:
            merged[parameter] = setting
    return merged
