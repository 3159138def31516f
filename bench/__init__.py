"""snapstore's benchmark harness, run as ``python -m bench`` (see docs/benchmarks.md)."""
