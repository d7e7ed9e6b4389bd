"""Stage 3, score: metrics per question, tie-aware metrics, experiments and statistics, derived report tables."""
