"""Rankers other packages register through the ``sitegen.rankers`` entry-point group.

A package declares, in its ``pyproject.toml``::

    [project.entry-points."sitegen.rankers"]
    my-bm25 = "my_package.rankers:make_my_bm25"

Each entry point names a zero-argument factory returning a :class:`~sitegen.rankers.base.Ranker` (with a
:class:`~sitegen.rankers.base.Contract`) whose ``name`` is the entry point's name. The entry points are
consulted, lazily, only for a name that is not one of the built-in :data:`~sitegen.rankers.RANKERS`, so a
broken plugin never affects a build that does not ask for it. The audit recomputes a lexical, dense or
fusion ranker from the inputs alone; another family is refused there, as for any ranker sitegen does not ship.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

from sitegen.errors import SitegenError
from sitegen.rankers.base import Contract, Ranker
from sitegen.wording import a_type

__all__ = ["GROUP", "entry_point_names", "load_entry_point_ranker"]

GROUP = "sitegen.rankers"


def _entry_points() -> list[Any]:
    return list(importlib.metadata.entry_points(group=GROUP))


def entry_point_names() -> tuple[str, ...]:
    """The names registered in the group, sorted (nothing is imported)."""
    return tuple(sorted({ep.name for ep in _entry_points()}))


def _package(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", None) or (getattr(dist, "metadata", None) or {}).get("Name")
    return f"package {name}" if name else "an unnamed package"


def load_entry_point_ranker(name: str) -> Ranker | None:
    """The ranker the entry point ``name`` makes, None when no entry point has that name; a broken entry point
    (cannot be imported, not callable, raises, returns no ranker or one of another name) is one SitegenError."""
    found = [ep for ep in _entry_points() if ep.name == name]
    if not found:
        return None
    where = f"ranker {name} (entry point {found[0].value!r} of {_package(found[0])}, group {GROUP})"
    if len({ep.value for ep in found}) > 1:
        sources = "; ".join(f"{ep.value!r} of {_package(ep)}" for ep in found)
        raise SitegenError(f"ranker {name}: more than one entry point in group {GROUP} has this name: {sources}")
    try:
        factory = found[0].load()
    except Exception as exc:
        raise SitegenError(f"{where}: cannot be loaded: {type(exc).__name__}: {exc}") from exc
    if not callable(factory):
        raise SitegenError(f"{where}: names {a_type(factory)}, not a factory")
    try:
        ranker = factory()
    except Exception as exc:
        raise SitegenError(f"{where}: the factory raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(getattr(ranker, "contract", None), Contract):
        raise SitegenError(f"{where}: the factory returned {type(ranker).__name__}, which has no Contract")
    lacks = [f"{m}()" for m in ("rank", "params") if not callable(getattr(ranker, m, None))]
    if not isinstance(getattr(ranker, "name", None), str):
        lacks.append("a name")
    if lacks:
        raise SitegenError(f"{where}: the factory returned {type(ranker).__name__}, which lacks {', '.join(lacks)}")
    return ranker
