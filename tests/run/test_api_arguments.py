"""``evaluate``'s own arguments are checked before anything loads or scores: one line naming
the argument, no traceback, the earlier report byte-identical; and a numpy integer is a
number wherever an option takes one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.colour_project import CHECKLIST, colour_project

from pytest_vlcheck import bounds, evaluate
from pytest_vlcheck.errors import VlcheckUserError


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return colour_project(pytester, CHECKLIST)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": 5}, "name: is 5; expected a non-empty one-line string"),
        ({"name": " "}, "name: is ' '; expected a non-empty one-line string"),
        ({"select": 5}, "select: is 5; expected a test id or capability prefix, or a list"),
        ({"select": ["color", 3]}, "select: is ['color', 3]; expected a test id"),
        ({"step": 2.5}, "step is 2.5; expected a whole number from 0 to 2**63 - 1"),
        ({"step": True}, "step is True; expected a whole number"),
    ],
)
def test_a_bad_argument_is_refused_before_the_model_loads(
    project: pytest.Pytester, arguments: dict, message: str
) -> None:
    first = evaluate("py:colour_model:make", "checks.yaml", report_dir="rep")
    assert first.results
    before = _files(project.path / "rep")
    with pytest.raises(VlcheckUserError) as caught:
        # a model that cannot load: the argument's message comes first, so nothing loaded
        evaluate("py:colour_model:absent", "checks.yaml", report_dir="rep", **arguments)
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)
    assert _files(project.path / "rep") == before


def test_a_model_on_the_meta_device_is_one_line(project: pytest.Pytester) -> None:
    import torch

    model = torch.nn.Linear(4, 4, device="meta")
    with pytest.raises(VlcheckUserError) as caught:
        evaluate(model, "checks.yaml", report_dir="rep")
    assert str(caught.value).startswith(
        "model: 2 of its weight tensors are on the meta device (shapes without values); "
        "expected a model with its weights loaded"
    )
    assert not (project.path / "rep").exists()


def test_a_numpy_integer_step_is_a_step(project: pytest.Pytester) -> None:
    logged: list[int | None] = []
    run = evaluate(
        "py:colour_model:make",
        "checks.yaml",
        step=np.int64(200),
        batch_size=np.int32(8),
        threshold=np.float32(0.5),
        log=lambda scalars, step: logged.append(step),
    )
    assert run.step == 200 and type(run.step) is int
    assert logged == [200]
    assert json.dumps({"step": run.step}) == '{"step": 200}'


@pytest.mark.parametrize(
    ("parse", "limits"),
    [(bounds.whole_number, (0, 10)), (bounds.size, (10,)), (bounds.finite_number, (0, 10))],
)
def test_every_bounded_option_takes_any_integer_but_a_bool(parse, limits) -> None:
    assert parse(np.int64(3), *limits) == 3
    assert parse(np.uint8(3), *limits) == 3
    for flag in (True, np.bool_(False)):
        with pytest.raises(bounds.BoundError, match=r"^is (True|np\.False_); expected"):
            parse(flag, *limits)
