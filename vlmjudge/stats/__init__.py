"""Statistics for judging the judges: comparisons between systems and agreement with people."""
