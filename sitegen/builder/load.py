"""The build's load phase: every input read and checked before any ranker runs, so a bad line, an unknown
corpus or a retriever that answers wrongly stops the build before any work (:func:`load_inputs`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitegen.builder.options import BuildOptions
from sitegen.compare.changes import Baseline, open_baseline
from sitegen.errors import BuildError, CorpusError
from sitegen.inputs.corpus import Corpus, discover_corpora, load_corpus
from sitegen.inputs.dates import source_date_epoch
from sitegen.inputs.freeze import check_frozen
from sitegen.inputs.vectors import SuppliedVectors, read_supplied_vectors
from sitegen.publish.layout import external_run_input
from sitegen.publish.redaction import check_redaction
from sitegen.rankers.external import ExternalRunRanker
from sitegen.rankers.fusion import RRFRanker
from sitegen.rankers.rerank import RerankRanker
from sitegen.rankers.retriever import RetrieverRanker
from sitegen.rankers.selection import select_rankers
from sitegen.scoring.hygiene import flag_lines, hygiene_report
from sitegen.wording import count

__all__ = [
    "LoadedInputs",
    "Log",
    "check_run_corpora",
    "load_inputs",
    "question_hygiene",
    "quiet",
    "select_corpora",
]

Log = Callable[[str], None]


def quiet(_: str) -> None:
    return None


def select_corpora(corpora_dir: Path, only: Sequence[str]) -> list[Path]:
    """Corpus folders to build, sorted; ``only`` names must all exist."""
    found = discover_corpora(corpora_dir)
    if not only:
        return found
    by_name = {p.name: p for p in found}
    unknown = [n for n in only if n not in by_name]
    if unknown:
        raise CorpusError(corpora_dir, f"no corpus named {', '.join(unknown)}; found: {', '.join(by_name)}")
    return [by_name[n] for n in sorted(set(only))]


def check_run_corpora(options: BuildOptions, selected: Sequence[Path]) -> None:
    """Refuse, before any work, a ``--run NAME=CORPUS:PATH`` whose corpus this build does not build: it
    would be ignored. The message lists the corpora found on disk and says when ``--only`` left it out."""
    built = {p.name for p in selected}
    for name, corpus_name, path in options.external_runs:
        if corpus_name in built:
            continue
        found = [p.name for p in discover_corpora(options.corpora_dir)]
        given = f"--run {name}={corpus_name}:{path}"
        if corpus_name in found:
            raise BuildError(
                f"{given}: corpus {corpus_name} is not being built (--only {', '.join(sorted(set(options.only)))}); "
                f"add --only {corpus_name} or leave this --run out"
            )
        raise BuildError(
            f"{given}: no corpus named {corpus_name} in {options.corpora_dir}; "
            f"the corpora there are: {', '.join(found)}"
        )


def question_hygiene(corpora: Sequence[Corpus], strict: bool, log: Log = quiet) -> dict[str, dict[str, Any]]:
    """Each corpus's ``hygiene.json``, computed while loading; a flag is a warning on ``log``, or with
    ``strict`` (``--strict-questions``) an error naming the corpus, the flag and the question ids."""
    reports = {corpus.name: hygiene_report(corpus) for corpus in corpora}
    lines = [line for name, report in reports.items() for line in flag_lines(name, report)]
    if strict and lines:
        raise BuildError("question-set hygiene (--strict-questions): " + "; ".join(lines))
    for line in lines:
        log(f"warning: {line}")
    return reports


@dataclass(frozen=True)
class LoadedInputs:
    """Everything a build reads before any ranker runs, each part checked."""

    corpora: tuple[Corpus, ...]
    #: The rankers ``--ranker`` asks for (or the default set), in build order.
    rankers: tuple[Any, ...]
    #: Per corpus: its runs from other systems (``runs/*.trec``, ``--run``), then the ``--retriever`` runs.
    externals: Mapping[str, tuple[ExternalRunRanker, ...]]
    #: Per corpus: the fusions its ``sitegen.json`` asks for, then its rerank stages (``"reranks"``).
    fusions: Mapping[str, tuple[RRFRanker | RerankRanker, ...]]
    #: Per corpus: the ``--retriever`` runs alone, whose call times go to ``timings/``.
    retrieved: Mapping[str, tuple[RetrieverRanker, ...]]
    #: Per corpus: ``hygiene.json``.
    hygiene: Mapping[str, Mapping[str, Any]]
    #: Per corpus: the vectors it brings, checked against its ids; None when it brings none.
    supplied: Mapping[str, SuppliedVectors | None]
    #: ``--baseline``, verified against its own manifest.
    baseline: Baseline | None
    #: Per corpus: the dense rankers of the model entries its ``sitegen.json`` declares (``"models"``).
    models: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.corpora]


def load_inputs(options: BuildOptions, log: Log) -> LoadedInputs:
    """Read and check every input of the build; raise SitegenError naming the first problem."""
    folders = select_corpora(options.corpora_dir, options.only)
    check_run_corpora(options, folders)
    source_date_epoch()
    # Refused before anything is loaded or written: a baseline failing its own manifest compares nothing.
    baseline = open_baseline(options.baseline) if options.baseline is not None else None
    corpora = [load_corpus(f) for f in folders]
    for line in check_redaction(corpora, options.redact, options.publish_vectors, options.baseline is not None):
        log(line)
    # A frozen corpus whose inputs changed is refused here, before any work, unless allow_edited.
    for name, state in check_frozen(corpora, options.allow_edited).items():
        if state.edited_files:
            log(f"warning: {name}: inputs edited after freezing on {state.date}: {state.describe()} (--allow-edited)")
    for corpus in corpora:
        log(
            f"{corpus.name}: {count(len(corpus.documents), 'passage')}, {count(len(corpus.queries), 'question')}, "
            f"{count(sum(len(j) for j in corpus.qrels.values()), 'judged pair')}"
        )
    hygiene = question_hygiene(corpora, options.strict_questions, log)
    # Vectors a corpus brings (embeddings/) are checked against its ids here, before any work.
    supplied = {c.name: read_supplied_vectors(c) for c in corpora}
    # The build's rankers and each corpus's: run files are parsed and retrievers asked here, once, and kept.
    selected = select_rankers(corpora, options, external_run_input, log)
    return LoadedInputs(
        corpora=tuple(corpora),
        rankers=selected.rankers,
        externals=selected.externals,
        fusions=selected.fusions,
        models=selected.models,
        retrieved=selected.retrieved,
        hygiene=hygiene,
        supplied=supplied,
        baseline=baseline,
    )
