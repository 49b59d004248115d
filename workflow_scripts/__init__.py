"""Stage modules of the sentence-embedding probing workflow (one module per stage)."""
