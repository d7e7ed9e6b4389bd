"""``sitegen init``: a commented starter ``sitegen.toml`` and a small example corpus, so a first report is one
``sitegen build`` away and the corpus format can be read from a working example."""

from __future__ import annotations

import json
from pathlib import Path

import click

from sitegen.cli.common import CommandError, _os_problem
from sitegen.cli.config import CONFIG_FILE
from sitegen.wording import count

__all__ = ["STARTER_CONFIG", "example_corpus_files", "init_command"]

EXAMPLE_CORPUS = "bike-workshop"

STARTER_CONFIG = f"""\
# sitegen.toml: what `sitegen build` (run in this folder, with no flags) builds.
# Every key is optional; a flag on the command line overrides the key here.
# Paths are relative to this folder.

# The report's title, on every page, and a paragraph under it on the home page.
title = "Bike workshop search: an example report"
description = "Which ranker finds the right workshop note for a question from a mechanic? Written by sitegen init."

# The folder that holds one sub-folder per corpus (corpus.jsonl, queries.jsonl, qrels/test.tsv).
corpora = "corpora"

# Where the site is written; the folder is replaced only when the build succeeds.
out = "site"

# Build only these corpora (default: every corpus in the corpora folder).
# only = ["{EXAMPLE_CORPUS}"]

# Run only these rankers, plus what they fuse (default: every ranker; `sitegen rankers` lists them). The
# *-mpnet rankers embed with all-mpnet-base-v2, which needs the mpnet extra (see docs/models.md).
# rankers = ["bm25", "bm25-stem", "dense", "rrf-dense-bm25"]

# TREC run files of your own system, scored beside the built-in rankers: "NAME=CORPUS:PATH".
# runs = ["my-search={EXAMPLE_CORPUS}:runs/my-search.trec"]

# A Python function called on every question: "NAME=module:callable" (imported from this folder).
# retrievers = ["mine=my_project.search:retrieve"]

# More embedding models, each a dense ranker: a folder, or a hub id from the local Hugging Face cache (tables
# come last in this file: a key written after one belongs to it).
# [[models]]
# name = "dense-e5"
# model = "intfloat/e5-small-v2"
# query_prefix = "query: "
# passage_prefix = "passage: "
"""

# (id, title, text): original notes written for this example.
_PASSAGES = [
    (
        "brake-pads-worn",
        "When to replace rim brake pads",
        "Rim brake pads have grooves moulded into the rubber. When the grooves are gone, or the pad is worn down "
        "to the wear line printed on its side, fit new pads. Worn pads squeal, stop late and can let the metal "
        "holder touch the rim, which scores the braking surface.",
    ),
    (
        "disc-brake-bleed",
        "Bleeding hydraulic disc brakes",
        "A spongy lever that pulls almost to the handlebar means air in the hydraulic line. Bleed the brake: "
        "fit the bleed kit, push fresh fluid from the caliper up to the lever until no bubbles appear, then "
        "close the port. Use only the fluid printed on the lever, mineral oil or DOT; the two destroy each "
        "other's seals.",
    ),
    (
        "chain-stretch",
        "Measuring chain wear",
        "A chain does not really stretch; its pins and rollers wear, so the pitch grows. Put a chain checker "
        "in the links: at 0.5 % wear on an 11- or 12-speed drivetrain, replace the chain before it wears the "
        "cassette. Left longer, a new chain will skip on the old cogs and both must be replaced.",
    ),
    (
        "tubeless-sealant",
        "Topping up tubeless sealant",
        "Tubeless sealant dries out in two to six months, faster in hot weather. Shake the wheel and listen: "
        "no sloshing means it is time to add more. Remove the valve core, inject 30 to 60 ml through the "
        "valve with a syringe, refit the core and spin the wheel so the sealant coats the tyre.",
    ),
    (
        "tyre-pressure",
        "Choosing tyre pressure",
        "Wider tyres need less pressure. A 28 mm road tyre for a 75 kg rider runs well near 5.5 bar; a 2.4 inch "
        "mountain bike tyre near 1.6 bar. Too hard and the tyre bounces and loses grip on rough ground; too "
        "soft and it pinches the tube on a kerb or squirms in corners.",
    ),
    (
        "gear-indexing",
        "Fixing gears that skip or rub",
        "If the chain hesitates going to a larger cog, add cable tension: turn the barrel adjuster on the rear "
        "derailleur a quarter turn anticlockwise and shift again. If it hesitates going to a smaller cog, turn "
        "it clockwise. A bent derailleur hanger causes the same symptoms and must be straightened first.",
    ),
    (
        "headset-play",
        "Checking the headset for play",
        "Hold the front brake and rock the bike back and forth. A knock or movement felt at the top of the fork "
        "means the headset is loose. Loosen the stem bolts, tighten the top cap a little, line up the stem with "
        "the wheel and tighten the stem bolts again to the torque printed on the stem.",
    ),
    (
        "workshop-hours",
        "Booking a service",
        "The workshop takes bookings Tuesday to Saturday. A standard service takes one working day; a full "
        "strip-down with bearing replacement takes three. Bring the bike clean, and tell the mechanic about "
        "any noise and when it happens.",
    ),
]

# (id, text, kind, relevant passage or None for a question no passage answers)
_QUESTIONS = [
    (
        "q1",
        "My brake lever goes nearly all the way to the bars and feels soft. What should I do?",
        "paraphrase",
        "disc-brake-bleed",
    ),
    ("q2", "chain checker 0.5 %", "exact-term", "chain-stretch"),
    ("q3", "How often does the liquid inside a tubeless tyre need refilling?", "paraphrase", "tubeless-sealant"),
    ("q4", "barrel adjuster", "exact-term", "gear-indexing"),
    ("q5", "There is a clunk at the front when I brake hard and rock the bike.", "paraphrase", "headset-play"),
    ("q6", "How much does a new carbon frame cost?", "paraphrase", None),
]

_README = """\
# Bike workshop (example)

A small example corpus written by `sitegen init`: eight workshop notes and six questions, one of which no note
answers. Replace it with your own passages and questions; `sitegen validate corpora/bike-workshop` checks them.

License: CC0 1.0 (public domain dedication); the text was written for this example.
"""


def example_corpus_files() -> dict[str, str]:
    """The example corpus's files (path inside the corpus folder -> text), using the optional ``title``,
    ``kind`` and ``answerable`` fields and README.md, so the example shows the common format."""
    corpus = "".join(
        json.dumps({"_id": pid, "title": title, "text": text}, ensure_ascii=False) + "\n"
        for pid, title, text in _PASSAGES
    )
    queries = "".join(
        json.dumps({"_id": qid, "text": text, "kind": kind, "answerable": rel is not None}, ensure_ascii=False) + "\n"
        for qid, text, kind, rel in _QUESTIONS
    )
    qrels = "query-id\tcorpus-id\tscore\n" + "".join(f"{qid}\t{rel}\t1\n" for qid, _, _, rel in _QUESTIONS if rel)
    return {"corpus.jsonl": corpus, "queries.jsonl": queries, "qrels/test.tsv": qrels, "README.md": _README}


@click.command("init")
@click.argument("folder", required=False, default=Path("."), type=click.Path(file_okay=False, path_type=Path))
def init_command(folder: Path) -> None:
    """Write a commented sitegen.toml and an example corpus (corpora/bike-workshop/) into FOLDER.

    Nothing is overwritten: if any of the files exists, nothing is written. Then `sitegen validate
    corpora/bike-workshop` and `sitegen build` in FOLDER give a first report.

    \b
    Example:
        sitegen init my-report && cd my-report && sitegen build
    """
    files = {Path(CONFIG_FILE): STARTER_CONFIG} | {
        Path("corpora") / EXAMPLE_CORPUS / name: text for name, text in example_corpus_files().items()
    }
    existing = [str(folder / path) for path in files if (folder / path).exists()]
    if existing:
        verb = "exists" if len(existing) == 1 else "exist"
        raise CommandError(f"init refused: {', '.join(existing)} already {verb}; nothing was written")
    try:
        for path, text in files.items():
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("x", encoding="utf-8", newline="\n") as handle:  # "x": never replace a file
                handle.write(text)
    except OSError as exc:
        raise CommandError(f"init failed: {_os_problem(exc)}") from exc
    click.echo(
        f"wrote {folder / CONFIG_FILE} and {folder / 'corpora' / EXAMPLE_CORPUS}/ "
        f"({count(len(_PASSAGES), 'passage')}, {count(len(_QUESTIONS), 'question')}); next: sitegen build"
    )
