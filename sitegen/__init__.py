"""sitegen: turn frozen retrieval test collections into a verifiable evaluation report."""

__all__ = ["__version__"]

__version__ = "0.1.0"
