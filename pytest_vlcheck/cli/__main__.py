"""``python -m pytest_vlcheck.cli``: the same as the ``vlcheck`` console script."""

from pytest_vlcheck.cli import main

raise SystemExit(main())
