"""Your own retriever: ``--retriever NAME=module:callable``, the LangChain and LlamaIndex adapters, and rankers
other packages register through the ``sitegen.rankers`` entry-point group.

A retriever is asked every question while the build loads, and its answers become an external TREC run
(``inputs/runs/NAME.trec``): scored like any ranker, equal to trec_eval on the exported run, and audited
as "external: metrics verified, ranking not reproducible here". Any wrong answer fails the build before a
ranker runs, naming the retriever, the question and the bad value.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitegen.cli import cli
from sitegen.errors import SitegenError
from sitegen.publish.evidence import read_run
from sitegen.rankers import make_rankers
from sitegen.rankers.adapters import RANK_DERIVED, from_langchain, from_llamaindex
from tests.helpers import REPO, assert_metrics_match_trec_eval, build, file_tree

PAYMENTS = REPO / "corpora" / "payments-support"
EXTERNAL_NOTE = "external: metrics verified, ranking not reproducible here"

# A deterministic hashed bag of words, in plain Python: the test project's "embedding model".
HASHED_WORDS = """
import hashlib
import math
import re


def hashed_words(text, dim=64):
    vector = [0.0] * dim
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little") % dim] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def passages():
    with open("corpora/payments-support/corpus.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
"""

PLAIN = (
    """
import json
import re
"""
    + HASHED_WORDS
    + '''

PASSAGES = passages()


def overlap(question, k, filter):
    """Words in common with the passage, a plain function retriever."""
    words = set(re.findall(r"[a-z0-9]+", question.lower()))
    scored = []
    for doc in PASSAGES:
        common = words & set(re.findall(r"[a-z0-9]+", (doc["title"] + " " + doc["text"]).lower()))
        if common:
            scored.append((doc["_id"], len(common) / (1 + len(words))))
    scored.sort(key=lambda pair: -pair[1])
    return scored[:k]
'''
)

LANGCHAIN = (
    """
import json

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from sitegen.rankers.adapters import from_langchain
"""
    + HASHED_WORDS
    + """


class HashedWords(Embeddings):
    def embed_documents(self, texts):
        return [hashed_words(t) for t in texts]

    def embed_query(self, text):
        return hashed_words(text)


store = InMemoryVectorStore(embedding=HashedWords())
store.add_documents(
    [Document(page_content=d["title"] + " " + d["text"], metadata={"id": d["_id"]}) for d in passages()]
)
retrieve = from_langchain(store.as_retriever())
"""
)

LLAMAINDEX = (
    """
import json

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.schema import TextNode

from sitegen.rankers.adapters import from_llamaindex
"""
    + HASHED_WORDS
    + """


class HashedWords(BaseEmbedding):
    def _get_query_embedding(self, query):
        return hashed_words(query)

    async def _aget_query_embedding(self, query):
        return hashed_words(query)

    def _get_text_embedding(self, text):
        return hashed_words(text)


nodes = [
    TextNode(text=d["title"] + " " + d["text"], metadata={"doc": d["_id"]}, excluded_embed_metadata_keys=["doc"])
    for d in passages()
]
index = VectorStoreIndex(nodes, embed_model=HashedWords(model_name="hashed-words"))
retrieve = from_llamaindex(index.as_retriever(similarity_top_k=100), id_key="doc")
"""
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's project folder, the working directory, with the payments-support corpus under corpora/;
    the modules a test writes there are forgotten afterwards."""
    root = tmp_path / "project"
    shutil.copytree(PAYMENTS, root / "corpora" / "payments-support")
    monkeypatch.chdir(root)
    before = set(sys.modules)
    yield root
    for name in set(sys.modules) - before:
        if name.startswith("proj_"):
            del sys.modules[name]


def _module(folder: Path, name: str, source: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")


# ------------------------------------------------------------------- the done-when: three retrievers


@pytest.mark.slow
def test_a_project_with_a_plain_a_langchain_and_a_llamaindex_retriever_builds_a_verified_site(
    project: Path,
) -> None:
    pytest.importorskip("langchain_core", reason="langchain-core is not installed (pip install 'sitegen[langchain]')")
    pytest.importorskip(
        "llama_index.core", reason="llama-index-core is not installed (pip install 'sitegen[llamaindex]')"
    )
    from sitegen import audit

    _module(project, "proj_plain", PLAIN)
    _module(project, "proj_lc", LANGCHAIN)
    _module(project, "proj_li", LLAMAINDEX)
    log: list[str] = []
    out = project / "site"
    build(
        Path("corpora"),
        out,
        log=log,
        retrievers=(("plain", "proj_plain:overlap"), ("lc", "proj_lc:retrieve"), ("li", "proj_li:retrieve")),
        rankers=("bm25",),
    )
    base = out / "evidence" / "payments-support"
    metrics = json.loads((base / "metrics.json").read_text())
    assert set(metrics) == {"bm25", "plain", "lc", "li"}
    assert assert_metrics_match_trec_eval(out, "payments-support") > 0
    questions = sum(1 for line in (PAYMENTS / "queries.jsonl").read_text().splitlines() if line.strip())
    for name, target in (("plain", "proj_plain:overlap"), ("lc", "proj_lc:retrieve"), ("li", "proj_li:retrieve")):
        run = read_run(base / "runs" / f"{name}.json")
        assert run["contract"]["family"] == "external"
        assert run["params"]["retriever"] == target
        assert run["params"]["source"] == f"inputs/runs/{name}.trec"
        assert run["params"]["unknown_documents"] == [] and run["params"]["queries_without_hits"] == []
        assert (base / "inputs" / "runs" / f"{name}.trec").is_file()
        assert metrics[name]["overall"]["hit@5"] > 0.2, name  # the retrievers find things
        timing = json.loads((out / "timings" / f"retrievers-{name}.json").read_text())
        assert timing["kind"] == "sitegen-retriever-latency" and timing["retriever"] == name
        (row,) = timing["corpora"]
        assert row["corpus"] == "payments-support" and row["questions"] == questions
        assert 0 <= row["p50_ms"] <= row["p95_ms"] <= row["max_ms"] and row["total_s"] >= 0
    lc = read_run(base / "runs" / "lc.json")
    assert lc["params"]["scores"] == RANK_DERIVED
    assert all(hit["score"] == 100 - hit["rank"] + 1 for hits in lc["queries"].values() for hit in hits)
    assert any("retriever lc (proj_lc:retrieve): 60 questions" in line for line in log)
    assert not any("retrievers-" in p for p in file_tree(out / "evidence"))  # timings never enter the evidence

    report = audit.run_audit(out, echo=lambda _: None)
    assert report["verdict"] == "pass", [c for c in report["checks"] if c["status"] == "fail"]
    details = {c["name"]: c["detail"] for c in report["checks"]}
    for name in ("plain", "lc", "li"):
        assert details[f"run:payments-support/{name}"].endswith(f"(external: external trec run): {EXTERNAL_NOTE}")


@pytest.mark.slow
def test_a_retriever_s_evidence_is_byte_identical_across_builds_and_its_ties_follow_trec_eval(
    tmp_path: Path, project: Path
) -> None:
    _module(
        project,
        "proj_ties",
        """
        def tied(question, k, filter):
            return [("err-e4013", 1), ("err-e4011", 2.5), ("err-e4012", 1.0), ("err-e4014", 1)]
        """,
    )
    first, second = tmp_path / "one", tmp_path / "two"
    build(Path("corpora"), first, retrievers=(("ties", "proj_ties:tied"),), rankers=("bm25",))
    build(Path("corpora"), second, retrievers=(("ties", "proj_ties:tied"),), rankers=("bm25",))
    assert file_tree(first / "evidence") == file_tree(second / "evidence")
    run = read_run(first / "evidence" / "payments-support" / "runs" / "ties.json")
    hits = run["queries"]["q01"]
    # score descending, ties by document id descending: trec_eval's order, whatever order the retriever gave
    assert [(h["doc_id"], h["score"]) for h in hits] == [
        ("err-e4011", 2.5),
        ("err-e4014", 1.0),
        ("err-e4013", 1.0),
        ("err-e4012", 1.0),
    ]
    lines = (first / "evidence" / "payments-support" / "inputs" / "runs" / "ties.trec").read_text().splitlines()
    assert lines[:2] == ["q01 Q0 err-e4011 1 2.5 ties", "q01 Q0 err-e4014 2 1.0 ties"]
    assert_metrics_match_trec_eval(first, "payments-support")


# ------------------------------------------------------------------- every wrong answer fails the load


BAD = """
import math


def unknown(question, k, filter):
    return [("d1", 2.0), ("ghost-7", 1.0)] if question == "what is E4012" else [("d2", 1.0)]


def twice(question, k, filter):
    return [("d1", 2.0), ("d1", 1.0)]


def text_score(question, k, filter):
    return [("d1", "0.9")]


def nan_score(question, k, filter):
    return [("d1", math.nan)]


def inf_score(question, k, filter):
    return [("d1", math.inf)]


def huge_score(question, k, filter):
    return [("d1", 10**400)]


def bool_score(question, k, filter):
    return [("d1", True)]


def too_many(question, k, filter):
    return [(f"d{i}", 1.0) for i in range(1, k + 2)]


def raises(question, k, filter):
    raise RuntimeError("index not loaded")


def not_pairs(question, k, filter):
    return ["d1", "d2"]


def nothing(question, k, filter):
    return None


def int_id(question, k, filter):
    return [(1, 1.0)]


def empty(question, k, filter):
    return []


NOT_CALLABLE = 42
"""


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("unknown", r"retriever mine: corpus tiny: question q2: unknown document id 'ghost-7' \(not in the corpus\)"),
        ("twice", r"retriever mine: corpus tiny: question q1: document id 'd1' returned twice"),
        ("text_score", r"question q1: document 'd1': score '0\.9' is not a finite number"),
        ("nan_score", r"question q1: document 'd1': score nan is not a finite number"),
        ("inf_score", r"question q1: document 'd1': score inf is not a finite number"),
        ("bool_score", r"question q1: document 'd1': score True is not a finite number"),
        ("huge_score", r"question q1: document 'd1': score 10{400} is not a finite number"),
        ("too_many", r"retriever mine: corpus tiny: question q1: returned more than k=3 pairs"),
        ("raises", r"retriever mine: corpus tiny: question q1: raised RuntimeError: index not loaded"),
        ("not_pairs", r"question q1: item 1 is 'd1', not a \(doc_id, score\) pair"),
        ("nothing", r"question q1: returned None, not a list of \(doc_id, score\) pairs"),
        ("int_id", r"question q1: item 1: document id 1 is an int, not a string"),
        ("empty", r"retriever mine: corpus tiny: returned no passage for any of 4 questions"),
        ("NOT_CALLABLE", r"retriever mine: proj_bad:NOT_CALLABLE is an int, not a callable"),
        ("missing", r"retriever mine: proj_bad has no missing"),
    ],
)
def test_a_wrong_answer_fails_the_build_before_any_ranker_runs_naming_retriever_question_and_value(
    tmp_path: Path, tiny_corpus: Path, project: Path, ranked: list[str], target: str, message: str
) -> None:
    _module(project, "proj_bad", BAD)
    out = tmp_path / "site"
    with pytest.raises(SitegenError, match=message):
        build(tiny_corpus.parent, out, retrievers=(("mine", f"proj_bad:{target}"),), depth=3, rankers=("bm25",))
    assert ranked == []
    assert not out.exists()


def test_a_retriever_that_cannot_be_imported_is_one_line_naming_it(tmp_path: Path, tiny_corpus: Path, project: Path):
    _module(project, "proj_broken", "import not_a_module_anywhere\n")
    with pytest.raises(SitegenError, match=r"retriever x: cannot import proj_nope \(from .*\): ModuleNotFoundError"):
        build(tiny_corpus.parent, tmp_path / "site", retrievers=(("x", "proj_nope:f"),), rankers=("bm25",))
    with pytest.raises(SitegenError, match=r"retriever x: cannot import proj_broken .*'not_a_module_anywhere'"):
        build(tiny_corpus.parent, tmp_path / "site", retrievers=(("x", "proj_broken:f"),), rankers=("bm25",))


@pytest.mark.parametrize(
    ("retrievers", "message"),
    [
        ((("Mine", "proj_ok:f"),), r"retriever name 'Mine' must be lowercase"),
        ((("bm25", "proj_ok:f"),), r"retriever name 'bm25' is already a ranker of this build"),
        ((("a", "proj_ok:f"), ("a", "proj_ok:f")), r"retriever name 'a' is given twice"),
    ],
)
def test_retriever_names_are_checked(
    tmp_path: Path, tiny_corpus: Path, project: Path, retrievers: tuple, message: str
) -> None:
    _module(project, "proj_ok", "def f(question, k, filter):\n    return [('d1', 1.0)]\n")
    with pytest.raises(SitegenError, match=message):
        build(tiny_corpus.parent, tmp_path / "site", retrievers=retrievers, rankers=("bm25",))


def test_a_retriever_may_not_take_the_name_of_a_run_file(tmp_path: Path, tiny_corpus: Path, project: Path) -> None:
    _module(project, "proj_ok2", "def f(question, k, filter):\n    return [('d1', 1.0)]\n")
    (tiny_corpus / "runs").mkdir()
    (tiny_corpus / "runs" / "vendor.trec").write_text("q1 Q0 d1 1 1.0 x\n")
    with pytest.raises(SitegenError, match=r"retriever name 'vendor' is already an external run of corpus tiny"):
        build(tiny_corpus.parent, tmp_path / "site", retrievers=(("vendor", "proj_ok2:f"),), rankers=("bm25",))


def test_the_retriever_gets_each_question_k_and_its_filter(tmp_path: Path, corpus_writer, project: Path) -> None:
    seen: list[tuple[str, int, object]] = []

    def spy(question: str, k: int, filter: dict | None) -> list[tuple[str, float]]:
        seen.append((question, k, filter))
        return [("d1", 1.0)]

    docs = [
        {"_id": "d1", "title": "A", "text": "refund a payment", "metadata": {"tenant": "acme"}},
        {"_id": "d2", "title": "B", "text": "payouts", "metadata": {"tenant": "zeta"}},
    ]
    queries = [
        {"_id": "q1", "text": "refund", "kind": "k", "filter": {"tenant": "acme"}},
        {"_id": "q2", "text": "payouts", "kind": "k"},
    ]
    folder = corpus_writer("filtered", docs=docs, queries=queries, qrels=[("q1", "d1", 1), ("q2", "d2", 1)])
    build(folder.parent, tmp_path / "site", retrievers=(("spy", spy),), depth=7, rankers=("bm25",))
    assert seen == [("refund", 7, {"tenant": "acme"}), ("payouts", 7, None)]
    run = read_run(tmp_path / "site" / "evidence" / "filtered" / "runs" / "spy.json")
    assert run["params"]["retriever"].endswith(":test_the_retriever_gets_each_question_k_and_its_filter.<locals>.spy")


# ------------------------------------------------------------------- the command line


def test_cli_retriever_option(tmp_path: Path, tiny_corpus: Path, project: Path) -> None:
    _module(project, "proj_cli", BAD + "\n\ndef good(question, k, filter):\n    return [('d1', 0.5), ('d3', 0.25)]\n")
    base = [
        "build",
        "--corpora",
        str(tiny_corpus.parent),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--ranker",
        "bm25",
        "--quiet",
    ]
    bad_form = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "a"), "--retriever", "mine=proj_cli"])
    assert bad_form.exit_code == 2 and "is not NAME=module:callable" in bad_form.output
    failed = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "b"), "--retriever", "mine=proj_cli:unknown"])
    assert failed.exit_code == 1
    assert failed.output.strip().splitlines() == [
        "error: build failed: retriever mine: corpus tiny: question q2: unknown document id 'ghost-7' "
        "(not in the corpus)"
    ]
    good = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "c"), "--retriever", "mine=proj_cli:good"])
    assert good.exit_code == 0, good.output
    assert (
        (tmp_path / "c" / "evidence" / "tiny" / "inputs" / "runs" / "mine.trec")
        .read_text()
        .startswith("q1 Q0 d1 1 0.5 mine\nq1 Q0 d3 2 0.25 mine\n")
    )
    assert (tmp_path / "c" / "timings" / "retrievers-mine.json").is_file()


# ------------------------------------------------------------------- adapters


class _Doc:
    def __init__(self, metadata: dict) -> None:
        self.metadata = metadata


class _LangChainLike:
    def __init__(self, ids: list[str], key: str = "id") -> None:
        self.ids, self.key, self.calls = ids, key, []
        self.search_kwargs: dict = {"k": 4}

    def invoke(self, question: str, **kwargs):
        self.calls.append(kwargs)
        return [_Doc({self.key: i}) for i in self.ids[: kwargs.get("k", 4)]]


def test_from_langchain_scores_by_rank_asks_for_k_and_needs_the_id_key() -> None:
    retriever = _LangChainLike(["a", "b", "c", "d", "e"])
    retrieve = from_langchain(retriever, filter_kwargs=lambda f: {"filter": f})
    assert retrieve("q", 3, None) == [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    assert retrieve("q", 2, {"tenant": "x"}) == [("a", 2.0), ("b", 1.0)]
    assert retriever.calls == [{"k": 3}, {"k": 2, "filter": {"tenant": "x"}}]
    with pytest.raises(SitegenError, match=r"LangChain result 1 has no metadata key 'id' .*\(its keys: doc\)"):
        from_langchain(_LangChainLike(["a"], key="doc"))("q", 3, None)
    assert from_langchain(_LangChainLike(["a"], key="doc"), id_key="doc")("q", 3, None) == [("a", 3.0)]


@pytest.mark.slow  # langchain-core's imports
def test_from_langchain_with_an_in_memory_vector_store() -> None:
    pytest.importorskip("langchain_core", reason="langchain-core is not installed (pip install 'sitegen[langchain]')")
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class Letters(Embeddings):
        def embed_documents(self, texts):
            return [self.embed_query(t) for t in texts]

        def embed_query(self, text):
            return [text.count("a") + 0.1, text.count("b") + 0.1, text.count("c") + 0.1]

    store = InMemoryVectorStore(embedding=Letters())
    store.add_documents([Document(page_content=t, metadata={"id": t}) for t in ("aaa", "bbb", "ccc", "aab")])
    retrieve = from_langchain(store.as_retriever())
    ranked = retrieve("aaaa", 10, None)
    assert [doc for doc, _ in ranked[:2]] == ["aaa", "aab"] and len(ranked) == 4
    assert [score for _, score in ranked] == [10.0, 9.0, 8.0, 7.0]
    filtered = from_langchain(store.as_retriever(), filter_kwargs=lambda f: {"filter": lambda d: "b" in d.page_content})
    assert [doc for doc, _ in filtered("aaaa", 10, {"has": "b"})] == ["aab", "bbb"]


@pytest.mark.slow  # llama-index-core's imports
def test_from_llamaindex_with_a_vector_store_index() -> None:
    pytest.importorskip(
        "llama_index.core", reason="llama-index-core is not installed (pip install 'sitegen[llamaindex]')"
    )
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import NodeWithScore, TextNode

    def letters(text: str) -> list[float]:
        return [text.count("a") + 0.1, text.count("b") + 0.1, text.count("c") + 0.1]

    class Letters(BaseEmbedding):
        def _get_query_embedding(self, query):
            return letters(query)

        async def _aget_query_embedding(self, query):
            return letters(query)

        def _get_text_embedding(self, text):
            return letters(text)

    nodes = [TextNode(text=t, metadata={"id": t}, excluded_embed_metadata_keys=["id"]) for t in ("aaa", "bbb", "aab")]
    index = VectorStoreIndex(nodes, embed_model=Letters(model_name="letters"))
    ranked = from_llamaindex(index.as_retriever(similarity_top_k=3))("aaaa", 2, None)
    assert [doc for doc, _ in ranked] == ["aaa", "aab"]
    assert ranked[0][1] > ranked[1][1] and all(isinstance(s, float) for _, s in ranked)
    with pytest.raises(SitegenError, match=r"LlamaIndex result 1 has no metadata key 'doc'"):
        from_llamaindex(index.as_retriever(similarity_top_k=3), id_key="doc")("aaaa", 2, None)

    class NoScores:
        def retrieve(self, question):
            return [NodeWithScore(node=TextNode(text="x", metadata={"id": i}), score=None) for i in ("p", "q")]

    assert from_llamaindex(NoScores())("x", 5, None) == [("p", 5.0), ("q", 4.0)]


# ------------------------------------------------------------------- entry-point rankers


def _dist(folder: Path, entry_points: str, module: str = "") -> None:
    """A tiny installed distribution: a dist-info folder (and a module) on sys.path."""
    info = folder / "sitegen_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sitegen-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[sitegen.rankers]\n" + entry_points)
    if module:
        (folder / "proj_plugin.py").write_text(textwrap.dedent(module))


PLUGIN = """
from sitegen.rankers.bm25 import BM25Ranker


def stemmed():
    return BM25Ranker("plug-bm25", stemmed=True)


def wrong_name():
    return BM25Ranker("something-else", stemmed=True)


def no_contract():
    return object()


def raises():
    raise ValueError("no licence key")
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "plugin"
    _dist(
        folder,
        "plug-bm25 = proj_plugin:stemmed\nplug-wrong = proj_plugin:wrong_name\nplug-object = proj_plugin:no_contract\n"
        "plug-raises = proj_plugin:raises\nplug-missing = proj_plugin_gone:make\nbm25-stem = proj_plugin:raises\n",
        PLUGIN,
    )
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    sys.modules.pop("proj_plugin", None)


def test_an_entry_point_ranker_runs_and_is_audited(tmp_path: Path, tiny_corpus: Path, plugin: Path) -> None:
    from sitegen import audit

    (ranker,) = make_rankers(["plug-bm25"])
    assert ranker.name == "plug-bm25" and ranker.contract.family.value == "lexical"
    assert [r.name for r in make_rankers(["bm25-stem"])] == ["bm25-stem"]  # a built-in name is never a plugin's
    out = tmp_path / "site"
    build(tiny_corpus.parent, out, rankers=("bm25", "plug-bm25"))
    assert set(json.loads((out / "evidence" / "tiny" / "metrics.json").read_text())) == {"bm25", "plug-bm25"}
    assert audit.run_audit(out, echo=lambda _: None)["verdict"] == "pass"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "plug-missing",
            r"ranker plug-missing \(entry point 'proj_plugin_gone:make' of package sitegen-plugin, "
            r"group sitegen.rankers\): cannot be loaded: ModuleNotFoundError",
        ),
        ("plug-raises", r"ranker plug-raises .*: the factory raised ValueError: no licence key"),
        ("plug-object", r"ranker plug-object .*: the factory returned object, which has no Contract"),
        ("plug-wrong", r"the ranker registered as 'plug-wrong' calls itself 'something-else'"),
        ("nope", r"unknown ranker 'nope'; known rankers: bm25, .*, plug-bm25, plug-missing, plug-object"),
    ],
)
def test_a_broken_entry_point_is_one_clear_error(plugin: Path, name: str, message: str) -> None:
    with pytest.raises(SitegenError, match=message):
        make_rankers([name])


def test_entry_points_are_read_lazily_and_only_for_names_not_built_in(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    calls: list[str] = []

    def entry_points(**kwargs):
        calls.append(kwargs["group"])
        return []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    make_rankers(["bm25", "rrf-dense-bm25"])
    assert calls == []
    with pytest.raises(SitegenError, match="unknown ranker 'x'"):
        make_rankers(["x"])
    assert calls and set(calls) == {"sitegen.rankers"}


def test_a_retriever_on_two_corpora_is_told_each_questions_corpus_and_id(tmp_path: Path) -> None:
    from tests.helpers import RICH_DOCS, RICH_QRELS, RICH_QUERIES, TINY_QUERIES, write_corpus

    write_corpus(tmp_path / "corpora" / "tiny")
    write_corpus(tmp_path / "corpora" / "rich", RICH_DOCS, RICH_QUERIES, RICH_QRELS)
    first_doc = {"tiny": "d1", "rich": RICH_DOCS[0]["_id"]}
    asked: list[tuple[str, str, str]] = []

    def per_corpus(question: str, k: int, filter: dict | None, *, corpus: str, query_id: str) -> list:
        asked.append((corpus, query_id, question))
        return [(first_doc[corpus], 1.0)]  # each corpus's own index: a passage only that corpus has

    build(tmp_path / "corpora", tmp_path / "site", retrievers=(("mine", per_corpus),), rankers=("bm25",))
    want = [("rich", q["_id"], q["text"]) for q in RICH_QUERIES] + [("tiny", q["_id"], q["text"]) for q in TINY_QUERIES]
    assert asked == want
