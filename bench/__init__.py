"""Benchmarks: each compares against a floor or a peer measured in the same run."""
