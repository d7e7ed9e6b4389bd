"""Where everything lies in a site: the one module that names a folder or file of a bundle.

A site folder holds the pages, ``evidence/`` (the bundle the pages are read from) and a few files beside
them::

    index.html, metrics.html, ...                      pages (sitegen.publish.pages)
    style.css, site.js                                 the stylesheet and the one script every page links (sorting
                                                       and filtering, progressive: no page needs the script)
    .nojekyll                                          GitHub Pages' switch
    audit.py, audit.json, pages.json                   the standalone audit, its verdict, the pages' listing
    timings/                                           benchmark timings, kept out of the evidence
    verification.json                                  the last re-embedding and PostgreSQL rerun, likewise
    evidence/manifest.json                             sha256 of every evidence file
    evidence/<corpus>/...                              one corpus's evidence: see :class:`CorpusFiles`

Every path here is relative to the site root and written with ``/`` (``evidence/<corpus>/metrics.json``): the
form the manifest lists, a page links to and a JSON pointer's file names, so the same string serves all three.
``site_dir / path`` gives the file on disk; :meth:`sitegen.publish.bundle.Bundle.path` finds it in a bundle
opened at its evidence folder. The standalone ``audit.py`` spells these names again on purpose: it imports
nothing from sitegen.

The corpus input files keep the names the corpus format gives them (:mod:`sitegen.inputs.corpus`), under
``inputs/``; a bundle's ``embeddings/`` folder has the layout of a corpus's supplied vectors
(:mod:`sitegen.inputs.vectors`), so an evidence folder can be supplied as it is.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from sitegen.inputs.corpus import CONFIG_FILE, CORPUS_FILE, QRELS_FILE, QUERIES_FILE, README_FILE, RUNS_DIR
from sitegen.inputs.vectors import SUPPLIED_DIR, SUPPLIED_INDEX, SUPPLIED_PASSAGES, SUPPLIED_QUERIES

__all__ = [
    "AUDIT_REPORT",
    "AUDIT_SCRIPT",
    "CHANGES",
    "CHUNKING",
    "CHUNKS",
    "COST_TIMINGS",
    "EVIDENCE_DIR",
    "EXPERIMENTS",
    "FILTERING",
    "GZIP_ABOVE",
    "GZIP_SUFFIX",
    "HYGIENE",
    "INDEX_PAGE",
    "MANIFEST",
    "MANIFEST_NAME",
    "METRICS",
    "METRICS_PAGE",
    "NO_JEKYLL",
    "PACKING",
    "PAGE_LISTING",
    "PASSAGE_VECTORS",
    "PERFORMANCE_PAGE",
    "POSTGRES",
    "QUERY_VECTORS",
    "REFERENCED",
    "REPORT",
    "REPRODUCIBILITY_PAGE",
    "RETRIEVER_TIMINGS",
    "SCRIPT",
    "STYLESHEET",
    "SUMMARY",
    "TIES",
    "TIMINGS_DIR",
    "TIMING_DEFAULT",
    "TIMING_RESULTS",
    "TREC_EVAL",
    "TREC_QRELS",
    "VECTOR_FILES",
    "VERIFICATION",
    "CorpusFiles",
    "CorpusPages",
    "corpus_file",
    "external_run_input",
    "gzipped_name",
    "input_name",
    "input_of",
    "model_vector_dir",
    "model_vector_files",
    "page_name",
    "plain_name",
    "records_name",
    "retriever_timing",
    "run_file",
    "run_ranker",
    "timing_file",
    "trec_run_file",
    "vector_index_files",
    "vector_rows",
]

# ------------------------------------------------------------------------------------------ the site root

EVIDENCE_DIR = "evidence"
MANIFEST_NAME = "manifest.json"
#: ``evidence/manifest.json``; a bundle opened at its evidence folder holds it as ``MANIFEST_NAME``.
MANIFEST = f"{EVIDENCE_DIR}/{MANIFEST_NAME}"
AUDIT_SCRIPT = "audit.py"
AUDIT_REPORT = "audit.json"
PAGE_LISTING = "pages.json"
STYLESHEET = "style.css"
#: The one script: sortable tables and the question filter. No page depends on it; it is served, listed in
#: pages.json and hashed by the audit like the stylesheet.
SCRIPT = "site.js"
NO_JEKYLL = ".nojekyll"
TIMINGS_DIR = "timings"
#: The last verification with the model and PostgreSQL (sitegen.publish.verification), outside the evidence.
VERIFICATION = "verification.json"
#: Benchmark result files (``bench/run.py``, ``sitegen bench-pg``): ``results.json`` first, then the others by name.
TIMING_RESULTS = "results*.json"
TIMING_DEFAULT = "results.json"
#: ``bench/cost.py``'s ranker latencies, shown on each corpus page beside cost.json's sizes.
COST_TIMINGS = "results-cost.json"
#: A ``--retriever``'s call latencies, which the build writes itself.
RETRIEVER_TIMINGS = "retrievers-*.json"


def timing_file(name: str) -> str:
    """A timing file's site path: ``timings/<name>``."""
    return f"{TIMINGS_DIR}/{name}"


def retriever_timing(name: str) -> str:
    """``timings/retrievers-NAME.json``: one retriever's call latencies, timing rather than evidence."""
    return timing_file(RETRIEVER_TIMINGS.replace("*", name))


# ------------------------------------------------------------------------------- one corpus's evidence

#: Names inside ``evidence/<corpus>/``, as the evidence itself records them (``corpus.json``'s inputs, a run's
#: source, the trec_eval commands that run there).
SUMMARY = "corpus.json"
METRICS = "metrics.json"
REPORT = "report.json"
EXPERIMENTS = "experiments.json"
PACKING = "packing.json"
POSTGRES = "postgres.json"
CHUNKING = "chunking.json"
FILTERING = "filtering.json"
RERANK = "rerank.json"
COST = "cost.json"
TIES = "ties.json"
HYGIENE = "hygiene.json"
CHANGES = "changes.json"
TREC_EVAL = "trec_eval.json"
TREC_QRELS = "qrels.trec"
#: The chunks a chunked corpus was ranked as, in corpus.jsonl's format.
CHUNKS = "chunks.jsonl"
#: The files the bundle holds by reference instead of by copy (sha256, size, source), and the folder of the
#: records that stand in for a text file's lines (sitegen.publish.redaction).
REFERENCED = "referenced.json"
_REFERENCED_DIR = "referenced"
_RUNS = "runs"
_INPUTS = "inputs"
_BASELINE = "baseline"
_BASELINE_RECORD = "baseline.json"
#: The vectors of a corpus's passages and questions, rows in ``embeddings/index.json`` order.
PASSAGE_VECTORS = SUPPLIED_PASSAGES
QUERY_VECTORS = SUPPLIED_QUERIES
_SWEEP_INDEX = f"{SUPPLIED_DIR}/sweep-index.json"
_SWEEP_PASSAGES = f"{SUPPLIED_DIR}/sweep-passages.npy"


#: A run's JSON (``runs/<ranker>.json``) or the records standing in for a file held by reference whose bytes exceed
#: this are stored gzip-compressed as ``NAME.gz`` (sitegen.publish.evidence.gzip_bytes); at or below it they stay
#: plain JSON, readable in a browser. 1 MiB keeps every run of the committed corpora plain (the largest is 0.4 MB)
#: and compresses the runs of 1,000,000 x 5,000 (about 12 MB each). The TREC twins stay plain: the trec_eval
#: commands on the Reproducibility page read them as they are.
GZIP_ABOVE = 1 << 20
GZIP_SUFFIX = ".gz"


def gzipped_name(name: str) -> str:
    """Where a file stored compressed lies: ``runs/bm25.json.gz`` for ``runs/bm25.json``."""
    return name + GZIP_SUFFIX


def plain_name(name: str) -> str:
    """The file a stored name stands for: ``runs/bm25.json`` for ``runs/bm25.json.gz`` (any other name as it is)."""
    return name.removesuffix(GZIP_SUFFIX)


def _run(ranker: str, suffix: str) -> str:
    return f"{_RUNS}/{ranker}{suffix}"


def input_name(name: str) -> str:
    """A corpus input file's name in the bundle (``inputs/qrels/test.tsv``), as ``corpus.json`` lists it."""
    return f"{_INPUTS}/{name}"


def input_of(name: str) -> str:
    """The corpus input file a bundle name stands for: ``qrels/test.tsv`` for ``inputs/qrels/test.tsv``."""
    return name.removeprefix(f"{_INPUTS}/")


def records_name(name: str) -> str:
    """Where the records standing in for a file held by reference lie (``referenced/inputs/corpus.jsonl`` for
    ``inputs/corpus.jsonl``), relative to the corpus folder, as ``referenced.json`` names them."""
    return f"{_REFERENCED_DIR}/{name}"


def external_run_input(ranker: str) -> str:
    """Where an external run or a retriever's answers are copied among the inputs, as its run's params name it."""
    return input_name(f"{RUNS_DIR}/{ranker}.trec")


def run_file(ranker: str) -> str:
    """``runs/<ranker>.json``, relative to the corpus folder (what a trec_eval command or a link beside it names)."""
    return _run(ranker, ".json")


def trec_run_file(ranker: str) -> str:
    """``runs/<ranker>.trec``, relative to the corpus folder."""
    return _run(ranker, ".trec")


@dataclass(frozen=True)
class CorpusFiles:
    """Where one corpus's evidence lies, each path relative to the site root: ``evidence/<corpus>/...``."""

    corpus: str

    @property
    def folder(self) -> str:
        return f"{EVIDENCE_DIR}/{self.corpus}"

    def at(self, name: str) -> str:
        """A name inside the corpus folder (one of this module's, such as :data:`METRICS`) as a site path."""
        return f"{self.folder}/{name}"

    summary = property(lambda self: self.at(SUMMARY))
    metrics = property(lambda self: self.at(METRICS))
    report = property(lambda self: self.at(REPORT))
    experiments = property(lambda self: self.at(EXPERIMENTS))
    packing = property(lambda self: self.at(PACKING))
    postgres = property(lambda self: self.at(POSTGRES))
    chunking = property(lambda self: self.at(CHUNKING))
    filtering = property(lambda self: self.at(FILTERING))
    rerank = property(lambda self: self.at(RERANK))
    cost = property(lambda self: self.at(COST))
    ties = property(lambda self: self.at(TIES))
    hygiene = property(lambda self: self.at(HYGIENE))
    changes = property(lambda self: self.at(CHANGES))
    trec_eval = property(lambda self: self.at(TREC_EVAL))
    trec_qrels = property(lambda self: self.at(TREC_QRELS))
    chunks = property(lambda self: self.at(CHUNKS))
    referenced = property(lambda self: self.at(REFERENCED))
    runs = property(lambda self: self.at(_RUNS))
    inputs = property(lambda self: self.at(_INPUTS))
    embeddings = property(lambda self: self.at(SUPPLIED_DIR))
    vector_index = property(lambda self: self.at(SUPPLIED_INDEX))
    passage_vectors = property(lambda self: self.at(PASSAGE_VECTORS))
    query_vectors = property(lambda self: self.at(QUERY_VECTORS))
    sweep_index = property(lambda self: self.at(_SWEEP_INDEX))
    sweep_vectors = property(lambda self: self.at(_SWEEP_PASSAGES))

    def model_vectors(self, model: str | None) -> tuple[str, str, str]:
        """``(index.json, passages.npy, queries.npy)`` of a model entry's vectors as site paths (None: ``dense``'s)."""
        index, passages, queries = model_vector_files(model)
        return self.at(index), self.at(passages), self.at(queries)

    passages_input = property(lambda self: self.input(CORPUS_FILE))
    queries_input = property(lambda self: self.input(QUERIES_FILE))
    qrels_input = property(lambda self: self.input(QRELS_FILE))
    readme_input = property(lambda self: self.input(README_FILE))
    config_input = property(lambda self: self.input(CONFIG_FILE))
    #: ``baseline/``: what a build with ``--baseline`` keeps of the earlier build (sitegen.compare.changes).
    baseline = property(lambda self: self.at(_BASELINE))
    baseline_record = property(lambda self: self.at(f"{_BASELINE}/{_BASELINE_RECORD}"))

    def run(self, ranker: str) -> str:
        return self.at(run_file(ranker))

    def trec_run(self, ranker: str) -> str:
        return self.at(trec_run_file(ranker))

    def input(self, name: str) -> str:
        """A copy of one corpus input file (``name`` as the corpus folder has it: ``qrels/test.tsv``)."""
        return self.at(input_name(name))

    def records(self, name: str) -> str:
        """The records standing in for a file held by reference (``name`` inside the corpus folder, such as
        ``inputs/corpus.jsonl``)."""
        return self.at(records_name(name))

    def baseline_input(self, name: str) -> str:
        """The baseline's copy of one corpus input file."""
        return self.at(f"{_BASELINE}/{input_name(name)}")


def corpus_file(path: str) -> tuple[str, str] | None:
    """``(corpus, name)`` for a site path under ``evidence/<corpus>/``; None for any other path."""
    parts = PurePosixPath(path).parts
    if len(parts) < 3 or parts[0] != EVIDENCE_DIR:
        return None
    return parts[1], "/".join(parts[2:])


def run_ranker(name: str) -> str | None:
    """The ranker of ``runs/<ranker>.json`` (a name inside a corpus folder); None for any other file."""
    parts = PurePosixPath(plain_name(name)).parts
    if len(parts) == 2 and parts[0] == _RUNS and parts[1].endswith(".json"):
        return parts[1].removesuffix(".json")
    return None


def vector_rows(name: str) -> tuple[str, str] | None:
    """For a matrix of vectors (``embeddings/<stem>.npy``, or ``embeddings/<model>/<stem>.npy`` for a model
    entry's own vectors, a name inside a corpus folder): the index file that names its rows and the key of their
    ids there, ``embeddings/index.json`` and ``passages`` for ``embeddings/passages.npy``,
    ``embeddings/sweep-index.json`` and ``passages`` for ``embeddings/sweep-passages.npy``; None for any other
    file."""
    parts = PurePosixPath(name).parts
    if len(parts) not in (2, 3) or parts[0] != SUPPLIED_DIR or not parts[-1].endswith(".npy"):
        return None
    prefix, dash, key = parts[-1].removesuffix(".npy").rpartition("-")
    folder = "/".join(parts[:-1])
    return f"{folder}/{prefix}{dash}{PurePosixPath(SUPPLIED_INDEX).name}", key


#: The index files of a corpus's vectors and, for each, the matrices it names rows of by key.
VECTOR_FILES = {
    SUPPLIED_INDEX: (("passages", PASSAGE_VECTORS), ("queries", QUERY_VECTORS)),
    _SWEEP_INDEX: (("passages", _SWEEP_PASSAGES),),
}


def model_vector_dir(model: str | None) -> str:
    """The folder of one model entry's vectors inside a corpus folder: ``embeddings/`` for ``dense``'s (None),
    ``embeddings/<model>/`` for any other entry's, laid out as ``embeddings/`` is."""
    return SUPPLIED_DIR if model is None else f"{SUPPLIED_DIR}/{model}"


def model_vector_files(model: str | None) -> tuple[str, str, str]:
    """``(index.json, passages.npy, queries.npy)`` of one model entry's vectors, names inside a corpus folder."""
    folder = model_vector_dir(model)
    return tuple(f"{folder}/{PurePosixPath(n).name}" for n in (SUPPLIED_INDEX, PASSAGE_VECTORS, QUERY_VECTORS))  # type: ignore[return-value]


def vector_index_files(name: str) -> tuple[tuple[str, str], ...] | None:
    """For an index file of vectors (a name inside a corpus folder: ``embeddings/index.json``,
    ``embeddings/sweep-index.json`` or a model entry's ``embeddings/<model>/index.json``), the matrices it names
    rows of, by key; None for any other file."""
    if name in VECTOR_FILES:
        return VECTOR_FILES[name]
    parts = PurePosixPath(name).parts
    if len(parts) == 3 and parts[0] == SUPPLIED_DIR and parts[2] == PurePosixPath(SUPPLIED_INDEX).name:
        _, passages, queries = model_vector_files(parts[1])
        return (("passages", passages), ("queries", queries))
    return None


# ------------------------------------------------------------------------------------------------ pages

INDEX_PAGE = "index.html"
METRICS_PAGE = "metrics.html"
PERFORMANCE_PAGE = "performance.html"
REPRODUCIBILITY_PAGE = "reproducibility.html"
_SAFE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def page_name(identifier: str) -> str:
    """A file-name-safe, unique stem for any id: the id itself when it is plain lowercase
    ASCII, else a slug plus the first 10 hex digits of the id's sha256."""
    if _SAFE.fullmatch(identifier):
        return identifier
    slug = re.sub(r"[^a-z0-9]+", "-", identifier.lower()).strip("-")[:40] or "id"
    return f"{slug}-{hashlib.sha256(identifier.encode('utf-8')).hexdigest()[:10]}"


@dataclass(frozen=True)
class CorpusPages:
    """Where one corpus's pages and plots lie: ``corpora/<page name>/...``."""

    corpus: str

    @property
    def dir(self) -> str:
        return f"corpora/{page_name(self.corpus)}"

    def at(self, name: str) -> str:
        return f"{self.dir}/{name}"

    index = property(lambda self: self.at(INDEX_PAGE))
    changes = property(lambda self: self.at("changes.html"))
    kind_plot = property(lambda self: self.at("hit-at-1-by-kind.svg"))
    chunk_plot = property(lambda self: self.at("chunking-recall.svg"))

    def forest_plot(self, metric: str) -> str:
        """Each ranker's paired difference from the best one on ``metric``, the picture the corpus page opens with."""
        return self.at(f"forest-{metric.replace('@', '-at-')}.svg")

    def groups_plot(self, metric: str) -> str:
        """Each row's mean on ``metric`` with its interval and rank groups: the picture a home-page card opens with."""
        return self.at(f"groups-{metric.replace('@', '-at-')}.svg")

    def question(self, query_id: str) -> str:
        return self.at(f"questions/{page_name(query_id)}.html")

    def ranks(self, n: int) -> str:
        """The n-th (1-based) page of the first-relevant-rank table."""
        return self.at("ranks.html" if n == 1 else f"ranks-{n}.html")

    def passages(self, n: int) -> str:
        """The n-th (1-based) shard of passage texts."""
        return self.at(f"passages/{n}.html")

    def sweep_plot(self, fusion: str, sweep: str) -> str:
        return self.at(f"sweep-{page_name(fusion)}-{sweep}.svg")

    def changes_plot(self, ranker: str) -> str:
        return self.at(f"changes-{page_name(ranker)}.svg")
