"""The test suite's configuration (in tests/, so that running the bundled checklists from the
repository, as README's first command does, does not load it).

The test suite never reaches the network: hub libraries are told to stay offline, so a test
that would try to download fails fast instead of waiting out retries.

torch and open_clip are imported before any test (``pytest_configure`` below).

torch computes with one thread in every test process and every process a test starts
(``OMP_NUM_THREADS=1``, set before torch is imported and inherited by subprocesses), as
docs/performance.md advises for a shared machine: the models here are tiny, and with
``-n 2`` on two cores the default one-thread-per-core setting makes the workers' threads wait
on each other (a tiny LLaVA's forward passes took 6x the CPU time under load).

The pytest runs the tests start print the same on every host: pytest writes whole messages in
its short summary when ``CI`` or ``BUILD_NUMBER`` is set, so both are cleared here; a test
that needs them sets them itself.
"""

import os
from pathlib import Path

import pytest

ONE_THREAD = os.environ.setdefault("OMP_NUM_THREADS", "1") == "1"
os.environ.setdefault("MKL_NUM_THREADS", os.environ["OMP_NUM_THREADS"])

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for name in ("CI", "BUILD_NUMBER"):
    os.environ.pop(name, None)


def pytest_configure(config: pytest.Config) -> None:
    """Import torch and open_clip in every process that runs tests, before any test.

    torch cannot be initialised twice in one process, and pytester's in-process runs drop the
    modules they imported when they end: imported once here, torch stays for every test
    whatever the order (the tests that check torch is NOT imported run pytest in
    subprocesses). The same holds for open_clip, which pulls in triton and parts of torch
    (inductor) that register themselves once per process: imported again after pytester
    dropped them, they abort the process ("duplicate key") or raise ("already registered").
    xdist's controller runs no test and skips the import (about 13 s of CPU on two cores).
    """
    distributing = config.getoption("dist", "no") != "no" and config.getoption("tx", None)
    if distributing and not hasattr(config, "workerinput"):
        return
    import open_clip  # noqa: F401
    import torch

    if ONE_THREAD:  # a plugin may have imported torch before this file set the variable
        torch.set_num_threads(1)


# ---- tiny generative VLMs (tests/helpers/vqa_builders.py), built once per session ---------------------


@pytest.fixture(scope="session")
def llava_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers.vqa_builders import build_llava

    return build_llava(tmp_path_factory.mktemp("vqa") / "llava", seed=0)


@pytest.fixture(scope="session")
def qwen_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers.vqa_builders import build_qwen2_vl

    return build_qwen2_vl(tmp_path_factory.mktemp("vqa") / "qwen2-vl", seed=0)


@pytest.fixture(scope="session")
def paligemma_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers.vqa_builders import build_paligemma

    return build_paligemma(tmp_path_factory.mktemp("vqa") / "paligemma", seed=0)


@pytest.fixture(params=["llava", "qwen", "paligemma"])
def family_dir(request: pytest.FixtureRequest) -> Path:
    """Each family's folder (built once per session)."""
    return request.getfixturevalue(f"{request.param}_dir")
