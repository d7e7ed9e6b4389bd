"""What every page family shares: the Jinja environment, the number formats, numbers that carry their source,
relative links, and the writer that refuses one path twice.

No page computes a metric: every number is read from a JSON file under ``evidence/`` and formatted. Every link
goes through the ``url`` filter, relative to the page it appears on, so the site works at a domain root and
under any sub-path.
"""

from __future__ import annotations

import functools
import math
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import markdown
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from sitegen import wording
from sitegen.publish import layout

__all__ = [
    "TEMPLATES_DIR",
    "Page",
    "Site",
    "environment",
    "format_delta",
    "format_minus",
    "format_p",
    "format_score",
    "format_short",
    "format_signed",
    "pointer_part",
    "readme_lead",
    "render_markdown",
    "setting_label",
    "snippet",
    "url_for",
    "with_sources",
]

_PACKAGE = Path(__file__).resolve().parents[2]
_PACKAGED_TEMPLATES = _PACKAGE / "templates"
# An installed wheel carries the templates inside the package; a source checkout keeps them at the top.
TEMPLATES_DIR = _PACKAGED_TEMPLATES if _PACKAGED_TEMPLATES.is_dir() else _PACKAGE.parent / "templates"
SNIPPET_CHARS = 120
#: The site's fixed paths, as templates name them (``url(paths.manifest)``).
_PATHS = {
    "manifest": layout.MANIFEST,
    "audit_report": layout.AUDIT_REPORT,
    "stylesheet": layout.STYLESHEET,
    "script": layout.SCRIPT,
    "index": layout.INDEX_PAGE,
    "metrics": layout.METRICS_PAGE,
    "performance": layout.PERFORMANCE_PAGE,
    "reproducibility": layout.REPRODUCIBILITY_PAGE,
    "verification": layout.VERIFICATION,
}


def format_score(value: float) -> str:
    """Presentation rounding only; the evidence keeps full precision."""
    return f"{value:.3f}"


def format_signed(value: float) -> str:
    return f"{value:+.3f}"


def format_minus(value: float) -> str:
    """The negation of a difference, signed: ``a - b`` stored, ``b - a`` shown (never ``-0.000``)."""
    return format_signed(0.0 - value)


def format_delta(value: float) -> str:
    """A difference with its sign and as many decimals as it needs, three to six: a change of 0.0004 between
    0.2874 and 0.2878 (shown as 0.287 and 0.288) reads +0.0004, never +0.000; exactly no change reads +0.000."""
    decimals = 3
    while decimals < 6 and value and round(abs(value), decimals) == 0:
        decimals += 1
    return f"{value:+.{decimals}f}"


def format_short(value: float) -> str:
    """About four significant digits (15.23, 0.5432, 0.03279, at most six decimals), for a score in a narrow
    column; the page gives the full value, six decimals, in the number's title."""
    if value == 0:
        return "0"
    decimals = min(6, max(0, 3 - math.floor(math.log10(abs(value)))))
    return f"{value:.{decimals}f}"


def format_p(value: float) -> str:
    """p to two decimals, the precision the number of rounds supports."""
    return "< 0.01" if value < 0.005 else f"{value:.2f}"


def setting_label(value: Any) -> str:
    if isinstance(value, list):
        return ":".join(f"{v:g}" for v in value)
    return f"{value:g}"


def render_markdown(text: str) -> Markup:
    """Markdown to HTML with raw HTML switched off: tags in a README are shown as text."""
    converter = markdown.Markdown(extensions=["tables", "fenced_code"])
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    # A README's headings sit under the page's own: its # becomes h3, and so on down.
    html = re.sub(r"<(/?)h([1-6])>", lambda m: f"<{m.group(1)}h{min(int(m.group(2)) + 2, 6)}>", converter.convert(text))
    return Markup(html)


def readme_lead(readme: Markup) -> Markup:
    """The README's first paragraph and its licence paragraph (if any), shown above the collapsed README."""
    paragraphs = re.findall(r"<p>.*?</p>", str(readme), flags=re.S)
    licence = next((p for p in paragraphs if re.search(r"licen[cs]e", p, flags=re.I)), None)
    lead = paragraphs[:1] + ([licence] if licence and licence not in paragraphs[:1] else [])
    return Markup("\n".join(lead))


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` with its whitespace collapsed, cut to at most ``limit`` characters at the last word boundary
    (mid-word only when no boundary falls in the second half of the limit) and marked "…" when cut: a
    deterministic cut that depends on the characters alone, never on a browser's measure of width."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


# ------------------------------------------------------------------------------ numbers with their source


def _span(src: str, attributes: str, html: str) -> Markup:
    """``<span data-ev="src"attributes>html</span>``, ``src`` escaped, ``attributes`` and ``html`` HTML already.
    Joined as a string: ``Markup.format`` gives the same text at several times the cost, and a question page holds
    hundreds of these."""
    return Markup(f'<span data-ev="{escape(src)}"{attributes}>{html}</span>')


def _attribute(name: str, value: str) -> str:
    """`` name="value"``, the value escaped."""
    return f' {name}="{escape(value)}"'


def _shown(src: str, text: str, fmt: str) -> Markup:
    """A number on a page with its source: the audit reads ``data-ev`` (file and JSON pointer) and ``data-fmt``,
    formats the evidence's value the same way and compares it with the text."""
    # "raw", the default (str() of the value), is left unsaid
    return _span(src, "" if fmt == "raw" else _attribute("data-fmt", fmt), escape(text))


class _Sourced:
    """A number read from the evidence that remembers its file and JSON pointer; printed on a page it carries them."""

    __slots__ = ()
    src: str
    _plain: type

    def __html__(self) -> Markup:
        return _shown(self.src, str(self._plain(self)), "raw")


class SourcedFloat(_Sourced, float):
    __slots__ = ("src",)
    _plain = float


class SourcedInt(_Sourced, int):  # an int subclass cannot have slots: its src is kept in a __dict__
    _plain = int


def pointer_part(key: str) -> str:
    """One JSON pointer token (RFC 6901), as :func:`with_sources` writes it."""
    return key.replace("~", "~0").replace("/", "~1")


#: The sourced twin of each type of JSON number (a bool is neither: ``type(True) is bool``).
_TWINS: dict[type, type] = {float: SourcedFloat, int: SourcedInt}


def _sourced(obj: Any, src: str) -> Any:
    if isinstance(obj, dict):
        return {k: _sourced(v, f"{src}/{pointer_part(k)}") for k, v in obj.items()}
    if isinstance(obj, list):
        return [_sourced(v, f"{src}/{i}") for i, v in enumerate(obj)]
    twin = _TWINS.get(type(obj))
    if twin is None:
        return obj
    number = twin(obj)  # the type's own constructor, then the source: an evidence bundle holds 100,000s of numbers
    number.src = src
    return number


def with_sources(obj: Any, rel: str) -> Any:
    """``obj``, read from the site file ``rel``, with every number replaced by its sourced twin, whose source is
    ``rel#json-pointer``: the reader's mark for every evidence file the pages read."""
    return _sourced(obj, f"{rel}#")


def _ev_in(value: Any, table: Mapping[str, str], fmt: str | None = None) -> Markup:
    """A sourced number in a table that names its source once (``data-ev-base`` ``table["base"]`` and
    ``data-ev-fmt`` ``table["fmt"]``): the span carries only the rest of its source, and a format only when it
    differs from the table's; the audit joins them. A number not under the base is an error, never a silent
    miscitation."""
    src, base = getattr(value, "src", ""), table["base"]
    if not src.startswith(base + "/"):
        raise ValueError(f"{src!r} is not under the table's evidence base {base!r}")
    name = fmt or table["fmt"]
    # the value is a number (only a sourced number has a source), and a formatted number (digits, a sign, a point,
    # "inf" or "nan") holds no character HTML escapes: its text goes in as it is
    text = str(value._plain(value)) if name == "raw" else _TABLE_FORMATS[name](value)
    stated = "" if name == table["fmt"] else _attribute("data-fmt", name)
    if name in _TITLED:  # fewer digits on the page, the full value in the title; the audit checks both
        stated += f' title="{_TABLE_FORMATS[_TITLED[name]](value)}"'
    return _span(src[len(base) + 1 :], stated, text)


_TABLE_FORMATS: dict[str, Callable[[Any], str]] = {
    "score": format_score,
    "score6": lambda value: f"{value:.6f}",
    "short": format_short,
}
#: A format that shortens a number, and the format of the full value its span carries in a ``title``.
_TITLED = {"short": "score6"}


def _sourced_filter(fmt: Callable[[Any], str], name: str) -> Callable[[Any], Any]:
    def shown(value: Any) -> Any:
        text = fmt(value)
        src = getattr(value, "src", None)
        return _shown(src, text, name) if src else text

    return shown


def _count_filter(n: Any, singular: str, plural: str | None = None) -> Markup:
    """``{{ n | count("question") }}``: the number (sourced when it came from the evidence) and the noun
    that agrees with it."""
    return Markup("{} {}").format(n, wording.count(int(n), singular, plural).partition(" ")[2])


# ------------------------------------------------------------------------------------ pages and the site


@dataclass(frozen=True)
class Page:
    path: str
    template: str
    context: Mapping[str, Any]


class Site:
    """Collects pages and files, refusing to write one path twice."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.written: set[str] = set()

    def plot(self, path: str, draw: Callable[..., bytes], *args: Any) -> None:
        """Write ``draw(*args)`` to ``path``: SVG text, drawn in about a millisecond (:mod:`sitegen.publish.svg`)."""
        self.claim(path).write_bytes(draw(*args))

    def claim(self, path: str) -> Path:
        if path in self.written:
            raise ValueError(f"two pages want the same path {path!r}")
        self.written.add(path)
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        return target


@functools.lru_cache(maxsize=1 << 16)
def _link(target: str, base: str) -> str:
    """The site path ``target`` (no fragment) as a link from the folder ``base``: remembered, since every page of a
    folder links to the same files (a corpus's question pages to its passage shards, thousands of times)."""
    relative = posixpath.relpath(target, base)
    if target.endswith("/") and not relative.endswith("/"):
        relative += "/"
    return quote(relative)


def url_for(page_path: str) -> Callable[[str], str]:
    """The ``url`` function of one page: a site path as a link relative to that page."""
    base = posixpath.dirname(page_path) or "."

    def url(target: str) -> str:
        fragment = ""
        if "#" in target:
            target, fragment = target.split("#", 1)
            fragment = "#" + fragment
        return (_link(target, base) if target else quote(posixpath.basename(page_path))) + fragment

    return url


#: Every name an attribute lookup finds on a plain dict (its methods and object's); any other name can only be a key.
_DICT_ATTRIBUTES = frozenset(dir({}))


class _Environment(Environment):
    """Jinja's environment, but ``a.b`` on a plain dict, where ``b`` names no dict attribute, is looked up as a key
    at once: the value Jinja's lookup (attribute, then key) finds, without the failed attribute lookup it pays
    first. A question page reads hundreds of fields of dicts."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """The one template environment of a process: its filters are pure, and Jinja keeps each compiled template
    (recompiling one whose file changed), so a second build in the same process compiles none."""
    env = _Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["score"] = _sourced_filter(format_score, "score")
    env.filters["signed"] = _sourced_filter(format_signed, "signed")
    env.filters["delta"] = _sourced_filter(format_delta, "delta")
    env.filters["minus"] = _sourced_filter(format_minus, "minus")
    env.filters["score6"] = _sourced_filter(lambda value: f"{value:.6f}", "score6")
    env.filters["ev_in"] = _ev_in
    env.filters["pvalue"] = _sourced_filter(format_p, "pvalue")
    env.filters["setting"] = _sourced_filter(setting_label, "setting")
    env.filters["count"] = _count_filter
    env.globals["paths"] = _PATHS
    return env
