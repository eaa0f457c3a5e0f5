"""The test suite's configuration (in tests/, so that running the bundled checklists from the
repository, as README's first command does, does not load it).

The test suite never reaches the network: hub libraries are told to stay offline, so a test
that would try to download fails fast instead of waiting out retries.

torch and open_clip are imported before any test (see below).

The pytest runs the tests start print the same on every host: pytest writes whole messages in
its short summary when ``CI`` or ``BUILD_NUMBER`` is set, so both are cleared here; a test
that needs them sets them itself.
"""

import os

# torch cannot be initialised twice in one process, and pytester's in-process runs drop the
# modules they imported when they end: imported once here, torch stays for every test whatever
# the order (the tests that check torch is NOT imported run pytest in subprocesses). The same
# holds for open_clip, which pulls in triton and parts of torch (inductor) that register
# themselves once per process: imported again after pytester dropped them, they abort the
# process ("duplicate key") or raise ("already registered").
import open_clip  # noqa: F401
import torch  # noqa: F401

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for name in ("CI", "BUILD_NUMBER"):
    os.environ.pop(name, None)
