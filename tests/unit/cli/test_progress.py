"""The progress bar the CLI draws while embedding."""

from __future__ import annotations

import re

import pytest


def test_embedding_progress_ends_with_the_count_and_texts_per_second(capsys: pytest.CaptureFixture[str]) -> None:
    from sitegen.cli.common import _Progress

    bar = _Progress(64, "embedding tiny", quiet=False)
    bar.update(32)
    bar.update(32)
    bar.finish()
    assert re.search(r"embedding tiny: 64 texts in [0-9.]+ s \([0-9.]+ texts/s\)", capsys.readouterr().err)
