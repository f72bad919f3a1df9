"""Benchmarks: each writes ``bench/results/<name>.json``; :mod:`bench.report` renders ``docs/benchmarks.md``."""
