"""Stage 1, load: frozen corpus folders read and validated, chunked, filtered; foreign collections imported."""
