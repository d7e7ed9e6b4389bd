"""``sitegen build --out`` never replaces what it should not: inputs, someone's files, other corpora, rows
that PostgreSQL failed to produce; and one swap, under a lock, puts a complete site in place."""

from __future__ import annotations

import errno
import hashlib
import json
import shutil
import threading
from pathlib import Path

import pytest

from sitegen import swap
from sitegen.builder import BuildOptions
from sitegen.errors import OutputFolderError, SitegenError
from tests.helpers import build, cli_build, copy_site, file_tree, write_corpus

FAST = ("bm25",)  # no embeddings, no PostgreSQL: the cheapest build


def _assert_complete_site(site: Path, corpora: list[str]) -> None:
    """Every file the manifest lists has its sha256, the manifest lists the whole bundle, and the pages exist."""
    manifest = json.loads((site / "evidence" / "manifest.json").read_text())
    assert manifest["tool"]["name"] == "sitegen" and manifest["corpora"] == corpora
    listed = {p.relative_to(site).as_posix() for p in (site / "evidence").rglob("*") if p.is_file()}
    assert set(manifest["files"]) == listed - {"evidence/manifest.json"}
    for path, entry in manifest["files"].items():
        assert hashlib.sha256((site / path).read_bytes()).hexdigest() == entry["sha256"], path
    assert (site / "index.html").is_file() and (site / "audit.py").is_file()


def _leftovers(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}"))


@pytest.fixture(scope="module")
def earlier_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site of the tiny corpus, built once: each test that builds into a site gets a copy."""
    root = tmp_path_factory.mktemp("earlier")
    build(write_corpus(root / "corpora" / "tiny").parent, root / "site", rankers=FAST)
    return root / "site"


@pytest.fixture
def site(earlier_site: Path, tmp_path: Path) -> Path:
    return copy_site(earlier_site, tmp_path / "site")


# ------------------------------------------------------------------------------------- the inputs


@pytest.mark.parametrize("force", [False, True])
def test_out_equal_to_the_corpora_folder_is_refused_even_with_force_and_left_byte_for_byte(
    tmp_path: Path, tiny_corpus: Path, force: bool
) -> None:
    corpora = tiny_corpus.parent
    before = file_tree(corpora)
    result = cli_build(corpora, corpora, *(["--force"] if force else []))
    assert result.exit_code == 1
    assert result.output == (
        f"error: build failed: --out {corpora} equals the corpora folder {corpora}; "
        "the build would replace its inputs\n"
    )
    assert file_tree(corpora) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpora"]  # no lock file, no staging folder


@pytest.mark.parametrize(
    ("where", "relation"), [("inside", "is inside"), ("parent", "contains"), ("same via ..", "equals")]
)
def test_out_inside_or_containing_the_corpora_folder_is_refused_even_with_force(
    tmp_path: Path, tiny_corpus: Path, where: str, relation: str
) -> None:
    corpora = tiny_corpus.parent
    out = {"inside": corpora / "site", "parent": tmp_path, "same via ..": corpora / "tiny" / ".."}[where]
    before = file_tree(tmp_path)
    with pytest.raises(OutputFolderError, match=f"{relation} the corpora folder .*would replace its inputs"):
        build(corpora, out, cache=tmp_path / "cache", rankers=FAST, force=True)
    assert file_tree(tmp_path) == before and not (corpora / "site").exists()


def test_a_file_as_out_is_refused(tmp_path: Path, tiny_corpus: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("not a folder")
    with pytest.raises(OutputFolderError, match="is a file, not a folder"):
        build(tiny_corpus.parent, out, cache=tmp_path / "cache", rankers=FAST, force=True)
    assert out.read_text() == "not a folder"
    result = cli_build(tiny_corpus.parent, out)
    assert result.exit_code == 2 and "is a file" in result.output


# ------------------------------------------------------------------------------------- someone's files


def test_out_holding_unrelated_files_is_refused_and_kept_and_force_then_builds(
    tmp_path: Path, tiny_corpus: Path
) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    result = cli_build(tiny_corpus.parent, out)
    assert result.exit_code == 1
    assert result.output == (
        f"error: build failed: --out {out} is not empty and is not a sitegen site (it holds notes.txt); "
        "choose a new or empty folder, or pass --force to replace it\n"
    )
    assert file_tree(out) == {"notes.txt": b"my notes"}
    result = cli_build(tiny_corpus.parent, out, "--force")
    assert result.exit_code == 0, result.output
    _assert_complete_site(out, ["tiny"])
    assert not (out / "notes.txt").exists()


def test_the_refusal_lists_the_first_entries_and_counts_the_rest(tmp_path: Path, tiny_corpus: Path) -> None:
    out = tmp_path / "busy"
    for name in ("a.txt", "b.txt", "c.txt", "d.txt", "e"):
        (out / name).mkdir(parents=True)
    with pytest.raises(OutputFolderError, match=r"it holds a\.txt, b\.txt, c\.txt and 2 more"):
        build(tiny_corpus.parent, out, cache=tmp_path / "cache", rankers=FAST)


def test_a_folder_with_a_manifest_from_another_tool_is_not_a_sitegen_site(tmp_path: Path, tiny_corpus: Path) -> None:
    out = tmp_path / "other"
    (out / "evidence").mkdir(parents=True)
    (out / "evidence" / "manifest.json").write_text('{"tool": {"name": "mkdocs"}}')
    with pytest.raises(OutputFolderError, match="is not a sitegen site"):
        build(tiny_corpus.parent, out, cache=tmp_path / "cache", rankers=FAST)


def test_an_empty_folder_and_an_earlier_site_are_built_into_without_force(site: Path, tiny_corpus: Path) -> None:
    empty = site.parent / "empty"
    empty.mkdir()
    build(tiny_corpus.parent, empty, cache=site.parent / "cache", rankers=FAST)
    _assert_complete_site(empty, ["tiny"])
    build(tiny_corpus.parent, site, cache=site.parent / "cache", rankers=FAST)
    _assert_complete_site(site, ["tiny"])


def test_the_out_checks_run_before_any_corpus_is_loaded(
    tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: list[Path] = []
    monkeypatch.setattr("sitegen.builder.load.load_corpus", loaded.append)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "notes.txt").write_text("my notes")
    with pytest.raises(OutputFolderError):
        build(tiny_corpus.parent, tmp_path / "notes", cache=tmp_path / "cache", rankers=FAST)
    with pytest.raises(OutputFolderError):
        build(tiny_corpus.parent, tiny_corpus.parent, cache=tmp_path / "cache", rankers=FAST)
    assert loaded == []


# ------------------------------------------------------------------------------------- --only


def test_only_into_a_site_holding_other_corpora_is_refused_even_with_force_and_keeps_it(
    tmp_path: Path, tiny_corpus: Path
) -> None:
    write_corpus(tiny_corpus.parent / "other")
    out = tmp_path / "site"
    build(tiny_corpus.parent, out, cache=tmp_path / "cache", rankers=FAST)
    before = file_tree(out)
    result = cli_build(tiny_corpus.parent, out, "--only", "tiny", "--force")
    assert result.exit_code == 1
    assert result.output == (
        f"error: build failed: --only tiny would remove other from the site at {out} (a build replaces the "
        "whole folder); build every corpus, or choose another --out\n"
    )
    assert file_tree(out) == before


def test_only_into_a_new_folder_or_a_site_holding_only_the_named_corpora_builds(
    tmp_path: Path, tiny_corpus: Path
) -> None:
    write_corpus(tiny_corpus.parent / "other")
    out = tmp_path / "just-tiny"
    build(tiny_corpus.parent, out, cache=tmp_path / "cache", rankers=FAST, only=("tiny",))
    build(tiny_corpus.parent, out, cache=tmp_path / "cache", rankers=FAST, only=("tiny",))
    _assert_complete_site(out, ["tiny"])
    build(tiny_corpus.parent, out, cache=tmp_path / "cache", rankers=FAST, only=("tiny", "other"))
    _assert_complete_site(out, ["other", "tiny"])


# ------------------------------------------------------------------------------------- one swap, one writer


@pytest.mark.parametrize(
    ("step", "exchange_unsupported", "rename_fails_on"),
    [("exchange", False, 0), ("fallback: aside", True, 1), ("fallback: in", True, 2)],
)
def test_a_failure_at_any_step_of_the_swap_keeps_the_previous_site_complete(
    site: Path,
    tiny_corpus: Path,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
    exchange_unsupported: bool,
    rename_fails_on: int,
) -> None:
    before = file_tree(site)
    real_rename, calls = swap._rename, {"n": 0}

    def rename(source: Path, destination: Path) -> None:
        calls["n"] += 1
        if calls["n"] == rename_fails_on:
            raise OSError(errno.EIO, "injected failure")
        real_rename(source, destination)

    def exchange(first: Path, second: Path) -> bool:
        if exchange_unsupported:
            return False
        raise OSError(errno.EIO, "injected failure")

    monkeypatch.setattr(swap, "_exchange", exchange)
    monkeypatch.setattr(swap, "_rename", rename)
    (tiny_corpus / "README.md").write_text("# tiny\n\nChanged, so the new site differs.\n")
    with pytest.raises(OutputFolderError, match="injected failure"):
        build(tiny_corpus.parent, site, cache=site.parent / "cache", rankers=FAST)
    assert file_tree(site) == before, step
    _assert_complete_site(site, ["tiny"])
    assert _leftovers(site.parent, "site") == []


def test_a_killed_builds_staging_folder_is_removed_by_the_next_build(site: Path, tiny_corpus: Path) -> None:
    stale = site.parent / ".site.building-12345"
    (stale / "evidence").mkdir(parents=True)
    build(tiny_corpus.parent, site, cache=site.parent / "cache", rankers=FAST)
    assert _leftovers(site.parent, "site") == []


def test_two_builds_started_at_once_into_one_folder_leave_one_complete_site(
    tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    first_inside, second_done = threading.Event(), threading.Event()
    import sitegen.publish.audit_stage as audit_stage_module

    real_render = audit_stage_module.render_site
    renders = {"n": 0}
    guard = threading.Lock()

    def render(staging: Path) -> None:
        with guard:
            renders["n"] += 1
            first = renders["n"] == 1
        if first:  # hold the first build mid-way until the second has had its go
            first_inside.set()
            assert second_done.wait(60)
        real_render(staging)

    monkeypatch.setattr(audit_stage_module, "render_site", render)
    outcome: dict[str, BaseException | None] = {}

    def run(name: str) -> None:
        try:
            build(tiny_corpus.parent, out, cache=tmp_path / f"cache-{name}", rankers=("bm25", "dense"))
            outcome[name] = None
        except BaseException as exc:  # recorded for the assertions below
            outcome[name] = exc
        finally:
            if name == "second":
                second_done.set()

    first = threading.Thread(target=run, args=("first",))
    first.start()
    assert first_inside.wait(60)
    second = threading.Thread(target=run, args=("second",))
    second.start()
    second.join(60)
    first.join(60)
    assert outcome["first"] is None
    assert isinstance(outcome["second"], OutputFolderError)
    assert f"another build or import is writing {out}" in str(outcome["second"])
    _assert_complete_site(out, ["tiny"])
    assert _leftovers(tmp_path, "site") == []


# ------------------------------------------------------------------------------------- PostgreSQL rows


@pytest.fixture(scope="module")
def pg_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A site whose tiny corpus published pg-vector, built with the private PostgreSQL."""
    root = tmp_path_factory.mktemp("pg-site")
    corpora = write_corpus(root / "corpora" / "tiny").parent
    build(corpora, root / "site", cache=root / "cache", rankers=("bm25", "pg-vector"))
    assert "pg-vector" in json.loads((root / "site" / "evidence" / "tiny" / "corpus.json").read_text())["rankers"]
    return corpora, root / "site"


def _fail_postgres(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    from sitegen.postgres.server import PostgresUnavailable

    def fail(*args, **kwargs):
        raise PostgresUnavailable(f"injected: {where} failed")

    target = {
        "server start": "sitegen.postgres.server.PostgresServer.start",
        "corpus load": "sitegen.postgres.index.PgCorpusIndex.load",
        "ranking": "sitegen.rankers.pg.PgVectorRanker.rank",
    }[where]
    monkeypatch.setattr(target, fail)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("where", ["server start", "corpus load", "ranking"])
def test_postgres_failing_fails_a_build_whose_site_published_pg_rows_and_keeps_the_site(
    pg_site: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    corpora, published = pg_site
    out = Path(shutil.copytree(published, tmp_path / "site"))
    before = file_tree(out)
    _fail_postgres(monkeypatch, where)
    with pytest.raises(SitegenError) as info:
        build(corpora, out, cache=tmp_path / "cache", rankers=("bm25", "pg-vector"))
    assert str(info.value) == (
        f"PostgreSQL failed (injected: {where} failed), and the site at {out} publishes rows this build would "
        "drop (tiny: pg-vector); fix PostgreSQL (or --pg-dsn), or pass --allow-missing-postgres to publish "
        "them as not run"
    )
    assert file_tree(out) == before


@pytest.mark.slow
@pytest.mark.postgres
def test_allow_missing_postgres_publishes_the_pg_rows_as_not_run(
    pg_site: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpora, published = pg_site
    out = Path(shutil.copytree(published, tmp_path / "site"))
    _fail_postgres(monkeypatch, "server start")
    build(corpora, out, cache=tmp_path / "cache", rankers=("bm25", "pg-vector"), allow_missing_postgres=True)
    postgres = json.loads((out / "evidence" / "tiny" / "postgres.json").read_text())
    assert postgres["not_run"] == {"pg-vector": "injected: server start failed"}


def test_cli_flags_reach_the_build_options(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[BuildOptions] = []

    def capture(options: BuildOptions, **kwargs):
        seen.append(options)
        raise OutputFolderError("captured")

    monkeypatch.setattr("sitegen.builder.build_site", capture)
    assert cli_build().exit_code == 1
    assert cli_build(None, None, "--force", "--allow-missing-postgres").exit_code == 1
    assert [(o.force, o.allow_missing_postgres) for o in seen] == [(False, False), (True, True)]


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_failing_only_marks_rows_not_run_where_the_site_had_none(
    pg_site: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpora, _ = pg_site
    _fail_postgres(monkeypatch, "server start")
    build(corpora, tmp_path / "new", cache=tmp_path / "cache", rankers=("bm25", "pg-vector"))
    postgres = json.loads((tmp_path / "new" / "evidence" / "tiny" / "postgres.json").read_text())
    assert postgres["not_run"] == {"pg-vector": "injected: server start failed"}


@pytest.mark.slow
@pytest.mark.postgres
def test_require_postgres_still_fails_on_any_postgres_failure(
    pg_site: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpora, _ = pg_site
    _fail_postgres(monkeypatch, "server start")
    with pytest.raises(SitegenError, match=r"^injected: server start failed$"):
        build(corpora, tmp_path / "new", cache=tmp_path / "cache", rankers=("bm25", "pg-vector"), require_postgres=True)
    assert not (tmp_path / "new").exists()
