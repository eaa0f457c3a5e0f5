"""When a training callback evaluates: the one rule both framework hooks share."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_vlcheck.errors import VlcheckUserError


@dataclass
class Schedule:
    """Every ``every_n_steps`` optimizer steps, or (None) after each of the framework's own
    evaluations; a step is evaluated once even when the framework reports it twice
    (gradient accumulation calls the batch hook several times per optimizer step, the first
    ones before any step: step 0 is never due after a batch)."""

    every_n_steps: int | None = None
    last_step: int | None = None

    def __post_init__(self) -> None:
        n = self.every_n_steps
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise VlcheckUserError(
                f"every_n_steps is {n!r}; expected a whole number >= 1, or None to evaluate "
                "after each of the trainer's evaluations"
            )

    def due_after_step(self, step: int) -> bool:
        """After an optimizer step: due on every n-th, once."""
        n = self.every_n_steps
        return n is not None and step > 0 and step % n == 0 and self._new(step)

    def due_after_evaluation(self, step: int) -> bool:
        """After the framework's own evaluation: due when no step interval was given."""
        return self.every_n_steps is None and self._new(step)

    def _new(self, step: int) -> bool:
        if step == self.last_step:
            return False
        self.last_step = step
        return True
