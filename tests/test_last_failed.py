"""pytest's cache options (--lf, --ff, --nf) find checklist items by their node ids
``FILE::TEST[MODEL]``, as they find parametrized Python tests."""

from __future__ import annotations

import pytest
from helpers.colour_project import CHECKLIST, colour_project

MODEL = "--vl-model=py:colour_model:make"
NEW_TEST = """\
  - id: extra
    capability: attribute/color
    task: caption
    threshold: 0.5
    examples:
      - {image: red.png, caption: a red square, negatives: [a blue square]}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The colour project, run once with the cache provider on: ``hard[make]`` fails."""
    colour_project(pytester, CHECKLIST)
    pytester.runpytest(MODEL).assert_outcomes(passed=4, failed=1)
    return pytester


def test_last_failed_reruns_only_the_failed_item(project: pytest.Pytester) -> None:
    result = project.runpytest(MODEL, "--lf", "-v")
    result.assert_outcomes(failed=1)  # the passed items are left out at collection
    result.stdout.fnmatch_lines(
        [
            "*collected 1 item",
            "run-last-failure: rerun previous 1 failure",
            "checks.yaml::hard[[]make[]] FAILED*",
        ]
    )
    assert "color[make]" not in result.stdout.str()


def test_last_failed_forgets_an_item_once_it_passes(project: pytest.Pytester) -> None:
    project.runpytest(MODEL, "--lf", "--vl-threshold=0.5").assert_outcomes(passed=1)
    result = project.runpytest(MODEL, "--lf")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["run-last-failure: no previously failed tests, *"])


def test_failed_first_orders_the_failed_item_first(project: pytest.Pytester) -> None:
    result = project.runpytest(MODEL, "--ff", "--collect-only", "-q")
    assert result.stdout.lines[:5] == [
        "checks.yaml::hard[make]",
        "checks.yaml::color[make]",
        "checks.yaml::pick[make]",
        "checks.yaml::pair[make]",
        "checks.yaml::itm[make]",
    ]


def test_new_first_orders_a_new_item_first(project: pytest.Pytester) -> None:
    project.makefile(".yaml", checks=CHECKLIST + NEW_TEST)
    result = project.runpytest(MODEL, "--nf", "--collect-only", "-q")
    assert result.stdout.lines[0] == "checks.yaml::extra[make]"
    assert result.stdout.lines[1] == "checks.yaml::color[make]"


def test_node_ids_are_file_test_model(pytester: pytest.Pytester) -> None:
    """The documented contract holds, and a node id on the command line selects its item."""
    colour_project(pytester, CHECKLIST)
    result = pytester.runpytest(MODEL, "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.stdout.lines[:2] == ["checks.yaml::color[make]", "checks.yaml::hard[make]"]
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.stdout.lines[:2] == ["checks.yaml::color", "checks.yaml::hard"]
    result = pytester.runpytest(MODEL, "checks.yaml::hard[make]", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
