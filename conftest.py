"""Repository-level test configuration.

The test suite never reaches the network: hub libraries are told to stay offline, so a test
that would try to download fails fast instead of waiting out retries.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
