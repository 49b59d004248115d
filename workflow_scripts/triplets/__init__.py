"""Sentence-triplet probe (Zhu, Li & de Melo, seed 002): sentence transformations and datasets."""
