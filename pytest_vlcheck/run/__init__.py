"""The run core, free of pytest: a run's state (runners, results, gates) and CI sharding."""
