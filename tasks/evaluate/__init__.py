"""Evaluation: scoring model answers on released benchmarks with the seed papers' metrics."""
