#!/usr/bin/env python
"""Quality beside cost: each shipped corpus's rankers timed on this machine (a script that measures).

    .venv/bin/python bench/cost.py [--out bench/results-cost.json] [--only NAME ...] [--corpora corpora]

Embeds every passage and question with the packaged model (one text per pass, as a build does) and, when the
``sitegen[mpnet]`` parts are installed, with all-mpnet-base-v2 (32 per pass, as its model entry says), then
times each ranker's indexing and warm per-question latency, and a rerank's against its first stage
(:mod:`sitegen.bench.cost`). Without the parts the mpnet rankers are left out, and the script says so. Writes
``"kind": "sitegen-cost"`` with the machine; a build copies the file to ``timings/`` and each corpus page plots
nDCG@10 against the p50 latency.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("sitegen") is None:  # not installed: use the checkout this script is in
    sys.path.insert(0, str(REPO))

from sitegen.bench.cost import COPIES, COST_KIND, QUESTIONS, REPEATS, Embedded, corpus_timings  # noqa: E402
from sitegen.bench.machine import cpu_ticks, machine, other_cpu_share  # noqa: E402
from sitegen.embedding import mpnet  # noqa: E402
from sitegen.embedding.model import EmbeddingModel  # noqa: E402
from sitegen.embedding.models import MPNET_SPEC  # noqa: E402
from sitegen.embedding.vectors import CorpusEmbeddings  # noqa: E402
from sitegen.inputs.chunk_settings import parse_chunking  # noqa: E402
from sitegen.inputs.chunking import chunk_corpus  # noqa: E402
from sitegen.inputs.corpus import Corpus, discover_corpora, load_corpus, passage_text  # noqa: E402

RANKERS = (
    "bm25",
    "bm25-stem",
    "dense",
    "rrf-dense-bm25",
    "rrf-dense-bm25-stem",
    "rerank-dense",
    "dense-mpnet",
    "rrf-mpnet-bm25",
    "rrf-mpnet-bm25-stem",
    "rerank-mpnet",
    "bm25-filtered",
    "dense-filtered",
    "rrf-dense-bm25-filtered",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=REPO / "corpora")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results-cost.json")
    args = parser.parse_args()
    models = {"dense": EmbeddingModel()}
    if mpnet.part_files() is not None:
        models["dense-mpnet"] = EmbeddingModel(spec=MPNET_SPEC)
    else:
        print("the sitegen[mpnet] parts are not installed: the mpnet rankers are not timed", file=sys.stderr)
    for model in models.values():
        model.encode(["warm-up"])  # loading the model is not embedding time
    ticks, started = cpu_ticks(), time.perf_counter()
    corpora = []
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    for folder in discover_corpora(args.corpora):
        if args.only and folder.name not in args.only:
            continue
        corpus = load_corpus(folder)
        if "chunking" in corpus.config:
            corpus = chunk_corpus(corpus, parse_chunking(corpus.config["chunking"]).default)
        embedded = [_embed(corpus, name, model, log) for name, model in models.items()]
        corpora.append(corpus_timings(corpus, embedded, RANKERS, log=log))
        log(f"{corpus.name}: {len(corpus.documents)} passages timed")
    busy, own = cpu_ticks()
    result = {
        "kind": COST_KIND,
        "schema_version": 1,
        "machine": machine(),
        "run_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "method": f"per question: (best of {REPEATS} warm Ranker.rank calls on that question asked {COPIES} "
        f"times, less the same on none) / {COPIES}, over the first {QUESTIONS} questions; embedding as a build "
        f"does: " + ", ".join(f"{m.name} {m.batch_size} per pass" for m in models.values()),
        "other_cpu_share": other_cpu_share(busy - ticks[0], own - ticks[1], time.perf_counter() - started),
        "corpora": corpora,
    }
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _embed(corpus: Corpus, name: str, model: EmbeddingModel, log: Callable[[str], None]) -> Embedded:
    start = time.perf_counter()
    docs = model.encode([passage_text(d) for d in corpus.documents])
    passages_s = time.perf_counter() - start
    queries = model.encode([q.text for q in corpus.queries])
    vectors = CorpusEmbeddings(
        model.name,
        model.weights_sha256,
        tuple(d.doc_id for d in corpus.documents),
        docs,
        tuple(q.query_id for q in corpus.queries),
        queries,
    )
    log(f"{corpus.name}: {len(docs)} passages embedded by {model.name} in {passages_s:.1f} s")
    return Embedded(name, vectors, model.encode, passages_s)


if __name__ == "__main__":
    raise SystemExit(main())
