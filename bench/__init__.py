"""Headwater benchmarks: run with ``python -m bench WORKLOAD`` (see ``--help``)."""
