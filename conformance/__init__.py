"""Conformance cases derived from spec clauses, run against any implementation."""
