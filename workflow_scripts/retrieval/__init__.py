"""Retrieval probe (seed 003; methods.md §4): retrieval sets in BEIR's layout, exact FAISS search,
bootstrapped accuracy/NDCG, thresholds, COE/ROE, isotropy before and after transformations."""
