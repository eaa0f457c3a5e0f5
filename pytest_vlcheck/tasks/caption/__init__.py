"""The ``caption`` task kind: the kind, its example, and its fast path for large tests."""
