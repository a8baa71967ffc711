"""Benchmarks: load, latency and scale, measured against a ceiling taken in the same run."""
