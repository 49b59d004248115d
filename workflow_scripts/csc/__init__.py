"""Concept Separation Curves probe (methods.md §1): everything the probe owns.

perturb   insertion fuzzing, insertion negation and grammatical negation variants of a corpus, and
          the texts to embed (texts/<corpus>/part-NNN.parquet)
negation  the English grammatical negation used by perturb
tagger    NLTK's tagger and WordNet files for negation: found, fingerprinted, and a fast exact tagger
curves    similarities from the vector stores, KDE curves, overlap with bootstrapped intervals,
          plots and the aggregated tables
"""
