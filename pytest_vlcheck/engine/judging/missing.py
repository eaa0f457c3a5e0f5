"""What a run does with examples whose images cannot be loaded (``--vl-missing``).

Its own module, free of numpy, because the plugin's options name the policies before any
checklist is collected (``engine.judging.judge`` applies them)."""

from __future__ import annotations

from typing import Literal, get_args

from pytest_vlcheck.errors import VlcheckUserError

MissingPolicy = Literal["error", "skip"]
MISSING_POLICIES: tuple[MissingPolicy, ...] = get_args(MissingPolicy)


class MissingImagesError(VlcheckUserError, RuntimeError):
    """Some examples' images could not be loaded and the policy is to error."""
