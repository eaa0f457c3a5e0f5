"""What the tests share: tiny model builders, the colour scorer and project, gate suites."""
