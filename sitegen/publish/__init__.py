"""Stage 4, publish: the evidence bundle written and read back, and the pages rendered from it."""
