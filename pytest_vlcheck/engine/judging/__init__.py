"""Per-test judging: a test's scores turned into its result by its task kind, the extras a
result carries, and the policy for missing images."""
