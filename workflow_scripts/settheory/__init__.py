"""Set-theoretic compositionality (seed 001; methods.md §2): TextOverlap, TextDifference and TextUnion
samples from news articles, and the six criteria C1-C6 on any encoder.

- defaults.py   the built-in generator, prompt and sample-set settings (the config check reads them
                without the job's imports)
- samples.py    windows of three consecutive sentences (previous, S0, next) per article, fusions
                S1 = fuse(previous, S0) and S2 = fuse(S0, next) by a generator (or an imported table),
                echo detection; the sample set's texts for the embedding stage
- operators.py  the operator samples (overlap, union, difference) of every sample, and the
                cos(B, D) < threshold filter of the difference samples under the filter encoders
- criteria.py   per (sample set, model): the measures (cosine, dot, L1, L2, NED) and the projections
                behind C1-C6, read through the vector-store API
- tables.py     pooled epsilon/delta bounds, closed-form shares, bootstrapped intervals, the tables
                settheory_c1..c6.csv and the histogram plots
"""
