#!/usr/bin/env python
"""Quality beside cost: each shipped corpus's rankers timed on this machine (a script that measures).

    .venv/bin/python bench/cost.py [--out bench/results-cost.json] [--only NAME ...] [--corpora corpora]

Embeds every passage and question with the packaged model (one text per pass, as a build does), then times each
ranker's indexing and warm per-question latency, and a rerank's against its first stage
(:mod:`sitegen.bench.cost`). Writes ``"kind": "sitegen-cost"`` with the machine; a build copies the file to
``timings/`` and each corpus page plots nDCG@10 against the p50 latency.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("sitegen") is None:  # not installed: use the checkout this script is in
    sys.path.insert(0, str(REPO))

from sitegen.bench.cost import COPIES, COST_KIND, QUESTIONS, REPEATS, corpus_timings  # noqa: E402
from sitegen.bench.machine import cpu_ticks, machine, other_cpu_share  # noqa: E402
from sitegen.embedding.model import MODEL_NAME, EmbeddingModel  # noqa: E402
from sitegen.embedding.vectors import CorpusEmbeddings  # noqa: E402
from sitegen.inputs.chunk_settings import parse_chunking  # noqa: E402
from sitegen.inputs.chunking import chunk_corpus  # noqa: E402
from sitegen.inputs.corpus import discover_corpora, load_corpus, passage_text  # noqa: E402

RANKERS = (
    "bm25",
    "bm25-stem",
    "dense",
    "rrf-dense-bm25",
    "rrf-dense-bm25-stem",
    "rerank-dense",
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
    model = EmbeddingModel()
    model.encode(["warm-up"])  # loading the model is not embedding time
    ticks, started = cpu_ticks(), time.perf_counter()
    corpora = []
    for folder in discover_corpora(args.corpora):
        if args.only and folder.name not in args.only:
            continue
        corpus = load_corpus(folder)
        if "chunking" in corpus.config:
            corpus = chunk_corpus(corpus, parse_chunking(corpus.config["chunking"]).default)
        start = time.perf_counter()
        docs = model.encode([passage_text(d) for d in corpus.documents])
        passages_s = time.perf_counter() - start
        queries = model.encode([q.text for q in corpus.queries])
        embeddings = CorpusEmbeddings(
            MODEL_NAME,
            model.weights_sha256,
            tuple(d.doc_id for d in corpus.documents),
            docs,
            tuple(q.query_id for q in corpus.queries),
            queries,
        )
        print(f"{corpus.name}: {len(docs)} passages embedded in {passages_s:.1f} s", file=sys.stderr, flush=True)
        log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
        corpora.append(corpus_timings(corpus, embeddings, model.encode, RANKERS, passages_s, log=log))
        print(f"{corpus.name}: {len(corpus.documents)} passages timed", file=sys.stderr)
    busy, own = cpu_ticks()
    result = {
        "kind": COST_KIND,
        "schema_version": 1,
        "machine": machine(),
        "run_at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "method": f"per question: (best of {REPEATS} warm Ranker.rank calls on that question asked {COPIES} "
        f"times, less the same on none) / {COPIES}, over the first {QUESTIONS} questions; embedding one text per "
        f"pass with {MODEL_NAME}",
        "other_cpu_share": other_cpu_share(busy - ticks[0], own - ticks[1], time.perf_counter() - started),
        "corpora": corpora,
    }
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
