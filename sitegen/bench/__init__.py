"""Benchmarks that sit beside the build: the PostgreSQL cost test and the machine description every timing carries."""
