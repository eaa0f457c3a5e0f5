"""Repository-level pytest configuration: the pytester fixture drives end-to-end tests."""

pytest_plugins = ["pytester"]
