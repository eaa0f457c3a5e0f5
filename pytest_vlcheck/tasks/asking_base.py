"""What the kinds that always ask a generative model (``choice``, ``answer``) share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_vlcheck.lazy import numpy as np
from pytest_vlcheck.tasks.asking import refuse_grid
from pytest_vlcheck.tasks.base import BaseTask, image_cluster
from pytest_vlcheck.tasks.protocol import Judgement, ScoreScale


class AskingBaseTask(BaseTask):
    """Every test asks the model about one ``example.image``; no score grid is judged."""

    def asks_model(self, settings: Mapping[str, Any]) -> bool:
        """Always."""
        return True

    def judge(
        self,
        settings: Mapping[str, Any],
        examples: Sequence[Any],
        grids: Sequence[np.ndarray],
        scale: ScoreScale,
    ) -> Judgement:
        """Never: such a kind is judged from the model's replies (``judge_replies``)."""
        refuse_grid(self.name)

    def cluster_key(self, example: Any) -> str:
        """The image asked about."""
        return image_cluster(example.image)
