"""The run options as pytest holds them: its command line, else its ini file.

``PytestOptions`` is the plugin's ``OptionSource`` for ``run.settings.build_settings``, so the
``--vl-*`` options and the ``vl_*`` ini keys go through the same checks as ``evaluate``'s
keyword arguments, and messages name ``--vl-report`` or ``vl_batch_size (ini)``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vlcheck.run.options import INI_TWINS
from pytest_vlcheck.run.settings import Raw

_INI_KINDS = dict(INI_TWINS)
_PLAIN_NAMES = {"precision": "vl_precision", "missing": "vl_missing"}
"""Options whose argparse choices leave only the ini value to check: named plainly."""


class PytestOptions:
    """The run options from pytest's command line, else its ini file (``run.settings``'
    ``OptionSource``): messages name ``--vl-report`` or ``vl_batch_size (ini)``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rootdir = config.rootpath

    def get(self, key: str) -> Raw:
        """The option's value, else the ini's (lists and flags too)."""
        name = "report" if key == "report_dir" else key
        value = getattr(self.config.option, f"vl_{name}")
        where = _PLAIN_NAMES.get(key, f"--vl-{name.replace('_', '-')}")
        kind = _INI_KINDS.get(key)
        if kind == "bool":  # a flag: set on the command line or in the ini file
            return Raw(value or self.config.getini(f"vl_{name}"), where)
        if kind is not None and value in (None, []):
            value = self.config.getini(f"vl_{name}")
            if kind != "linelist":  # model and prior name the option, as they always have
                where = _PLAIN_NAMES.get(key, f"vl_{name} (ini)")
        return Raw(value, where)

    def cache_root(self, kind: str) -> Path:
        """A ``kind`` folder in pytest's cache dir, else under the rootdir (cache plugin off)."""
        cache = getattr(self.config, "cache", None)
        if cache is not None:
            return Path(cache.mkdir(f"vlcheck-{kind}"))
        return self.config.rootpath / ".vlcheck_cache" / kind
