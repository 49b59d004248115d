"""Concept Separation Curves probe (methods.md §1): everything the probe owns.

perturb     insertion fuzzing, insertion negation and grammatical negation variants of a corpus, and
            the texts to embed (texts/<corpus>/part-NNN.parquet)
negation    the English grammatical negation used by perturb
tagger      NLTK's tagger and WordNet files for negation: found, fingerprinted, and a fast exact tagger
curves      the score job: similarities from the vector stores, KDE curves, overlap, direction
            and their bootstrapped intervals, per (corpus, model)
plots       the plot job: a (corpus, model)'s curves and their shared area
tables      the aggregate job: the overlap table and the seed's Table 3 layout
conditions  the conditions and curve names the jobs and the planning share
"""
