"""PostgreSQL for the ``pg-*`` rankers: the server process (:mod:`.server`) and one corpus loaded into it, with
its queries (:mod:`.index`). The rankers that query it are :mod:`sitegen.rankers.pg`."""
