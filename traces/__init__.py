"""Trace schema, recording, generation and Spark invariant checks."""
