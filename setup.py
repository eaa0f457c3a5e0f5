"""Packaging that pyproject.toml cannot say: the top-level ``checklists/`` folder ships in the
wheel as the package ``pytest_vlcheck.checklists`` (so ``--vl-bundled`` and
``--pyargs pytest_vlcheck.checklists`` work from an installed wheel), and
``checklists_generative/`` as ``pytest_vlcheck.checklists_generative``."""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["pytest_vlcheck*"]),
        "pytest_vlcheck.checklists",
        "pytest_vlcheck.checklists_generative",
    ],
    package_dir={
        "pytest_vlcheck.checklists": "checklists",
        "pytest_vlcheck.checklists_generative": "checklists_generative",
    },
)
