"""The shared swap puts a finished tree in place in one step, under a lock, and never loses the old one."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from sitegen import swap
from sitegen.errors import OutputFolderError
from sitegen.swap import TargetLock, swap_into_place
from tests.helpers import file_tree


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """An old complete site at ``site`` and a new one staged beside it."""
    target = _tree(tmp_path / "site", {"index.html": "old", "evidence/manifest.json": "old manifest"})
    staging = _tree(tmp_path / ".site.building-test", {"index.html": "new", "evidence/manifest.json": "new"})
    return staging, target


def _siblings(target: Path) -> list[str]:
    return sorted(p.name for p in target.parent.iterdir() if p.name != target.name)


def test_renameat2_is_available_on_this_linux_machine() -> None:
    # The other tests' exchange path is the real one only where this holds.
    assert swap._renameat2() is not None


def test_swap_exchanges_the_trees_in_one_call_and_removes_the_old_one(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, target = pair
    new = file_tree(staging)
    renames: list[tuple[Path, Path]] = []
    monkeypatch.setattr(swap, "_rename", lambda a, b: renames.append((a, b)))
    swap_into_place(staging, target)
    assert file_tree(target) == new
    assert renames == []  # no rename(2): the target path was never without a complete tree
    assert _siblings(target) == []


def test_swap_into_a_missing_target_is_a_plain_rename(tmp_path: Path) -> None:
    staging = _tree(tmp_path / ".new", {"a.txt": "a"})
    swap_into_place(staging, tmp_path / "out")
    assert file_tree(tmp_path / "out") == {"a.txt": b"a"}
    assert _siblings(tmp_path / "out") == []


def test_swap_replaces_a_file_target_with_a_folder(tmp_path: Path) -> None:
    target = tmp_path / "tiny"
    target.write_text("a file where the corpus goes")
    staging = _tree(tmp_path / ".tiny.importing", {"corpus.jsonl": "{}\n"})
    swap_into_place(staging, target)
    assert file_tree(target) == {"corpus.jsonl": b"{}\n"}
    assert _siblings(target) == []


def test_fallback_without_renameat2_renames_aside_and_in_and_leaves_nothing_behind(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, target = pair
    new = file_tree(staging)
    monkeypatch.setattr(swap, "_exchange", lambda a, b: False)  # ENOSYS/EINVAL, or not Linux
    swap_into_place(staging, target)
    assert file_tree(target) == new
    assert _siblings(target) == []  # no .previous folder for the next writer to delete


def _failing_rename(fail_on_call: int):
    real = swap._rename
    calls = {"n": 0}

    def rename(source: Path, destination: Path) -> None:
        calls["n"] += 1
        if calls["n"] == fail_on_call:
            raise OSError(errno.EIO, "injected failure", str(source))
        real(source, destination)

    return rename


def _failing_exchange(first: Path, second: Path) -> bool:
    raise OSError(errno.EIO, "injected failure", str(first))


@pytest.mark.parametrize(
    ("step", "exchange", "rename_fails_on", "message"),
    [
        ("exchange", _failing_exchange, 0, "could not swap the new tree into"),
        ("fallback: move the old tree aside", lambda a, b: False, 1, "could not move .* aside"),
        ("fallback: move the new tree in", lambda a, b: False, 2, "the previous one was put back"),
    ],
)
def test_a_failure_at_any_step_of_the_swap_leaves_the_old_tree_in_place_and_complete(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, step: str, exchange, rename_fails_on: int, message: str
) -> None:
    staging, target = pair
    old, new = file_tree(target), file_tree(staging)
    monkeypatch.setattr(swap, "_exchange", exchange)
    monkeypatch.setattr(swap, "_rename", _failing_rename(rename_fails_on))
    with pytest.raises(OutputFolderError, match=message):
        swap_into_place(staging, target)
    assert file_tree(target) == old, step
    assert file_tree(staging) == new  # still there for the caller to remove
    assert _siblings(target) == [staging.name]  # no lock file, no tree left aside


def test_when_even_the_rollback_fails_the_message_says_where_the_old_tree_is(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, target = pair
    old = file_tree(target)
    monkeypatch.setattr(swap, "_exchange", lambda a, b: False)
    real = swap._rename
    calls = {"n": 0}

    def rename(source: Path, destination: Path) -> None:
        calls["n"] += 1
        if calls["n"] >= 2:
            raise OSError(errno.EIO, "injected failure")
        real(source, destination)

    monkeypatch.setattr(swap, "_rename", rename)
    with pytest.raises(OutputFolderError, match=r"rename .* by hand") as info:
        swap_into_place(staging, target)
    (aside,) = [p for p in target.parent.iterdir() if ".replaced-" in p.name]
    assert str(aside) in str(info.value)
    assert file_tree(aside) == old


def test_a_failure_removing_the_old_tree_reports_it_with_the_new_tree_in_place(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, target = pair
    new = file_tree(staging)

    def rmtree(path: Path) -> None:
        raise OSError(errno.EACCES, "injected failure")

    monkeypatch.setattr(swap.shutil, "rmtree", rmtree)
    with pytest.raises(OutputFolderError, match=r"was replaced, but its previous copy at .* could not be removed"):
        swap_into_place(staging, target)
    assert file_tree(target) == new


def test_a_second_writer_is_refused_while_the_lock_is_held_and_the_lock_file_goes_with_the_lock(
    tmp_path: Path,
) -> None:
    target = tmp_path / "site"
    with TargetLock(target) as lock:
        assert lock.path == tmp_path / ".site.lock" and lock.path.exists()
        with pytest.raises(OutputFolderError, match=f"another build or import is writing {target}"):
            TargetLock(target).__enter__()
        staging = _tree(tmp_path / ".staged", {"a": "a"})
        with pytest.raises(OutputFolderError, match="another build or import is writing"):
            swap_into_place(staging, target)  # no lock passed: it must take one itself
        assert not target.exists()
    assert list(tmp_path.iterdir()) == [staging]
    with TargetLock(target):  # released: the next writer gets it
        pass


def test_swap_refuses_a_lock_that_is_not_held_on_its_target(pair: tuple[Path, Path], tmp_path: Path) -> None:
    staging, target = pair
    with TargetLock(tmp_path / "elsewhere") as other, pytest.raises(ValueError, match="needs a held lock"):
        swap_into_place(staging, target, other)
    with pytest.raises(ValueError, match="needs a held lock"):
        swap_into_place(staging, target, TargetLock(target))
