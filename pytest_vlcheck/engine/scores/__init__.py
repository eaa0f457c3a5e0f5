"""What a score is keyed by and kept in: the scorer's source and identity, content keys, the
scorer wrapper that caches, and the on-disk embedding cache."""
