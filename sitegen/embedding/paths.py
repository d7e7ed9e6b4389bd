"""Where sitegen keeps what it may rebuild: the embedding caches, the step cache and joined model folders."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_cache_dir"]


def default_cache_dir() -> Path:
    """``$SITEGEN_CACHE``, else ``$XDG_CACHE_HOME/sitegen``, else ``~/.cache/sitegen``."""
    if env := os.environ.get("SITEGEN_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sitegen"
