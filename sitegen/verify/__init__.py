"""What ``sitegen audit`` adds to the standalone audit, each needing sitegen installed: the model
(``--reembed``), a PostgreSQL server (``--postgres``) and the page templates (``--pages``)."""
