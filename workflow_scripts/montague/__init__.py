"""Montague adjective-noun consistency probe (Carvalho et al., seed 004; methods.md §5).

phrases         word lists (config values, or a CSV in the published layout) -> the phrases of the
                regular language (A)+N up to three words, and every string the tests compare
                (texts/montague.<dataset>/part-NNN.parquet)
scores          the score job: distances from the vector stores, the three tests' verdicts, pooled
                shares with two-way (nouns x adjectives) bootstrap intervals, per (dataset, model)
tables          the aggregate job: the tables in the seed's layout and the heat maps
columns         the columns of the shares, which both jobs use
static_vectors  writes resources/montague/minilm_static_en.vec, the word-vector baseline of the
                offline default run (not part of the workflow)
"""
