"""Packaging that pyproject.toml cannot say: the top-level ``checklists/`` folder ships in the
wheel as the package ``pytest_vlcheck.checklists`` (so ``--vl-bundled`` and
``--pyargs pytest_vlcheck.checklists`` work from an installed wheel)."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["pytest_vlcheck*"]), "pytest_vlcheck.checklists"],
    package_dir={"pytest_vlcheck.checklists": "checklists"},
)
