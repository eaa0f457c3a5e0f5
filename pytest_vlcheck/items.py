"""pytest nodes: a checklist file collects one item per test per model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vlcheck.errors import ModelLoadError, VlcheckUserError
from pytest_vlcheck.results import REPORTED_FIELDS, CapabilityResult, Status
from pytest_vlcheck.results.verdict import final, unmeasured
from pytest_vlcheck.run.session import VlcheckSession

if TYPE_CHECKING:  # the loader, the engine and the reports are imported where they are used:
    # the plugin imports this module in every pytest run, checklists or not
    from pytest_vlcheck.checklist import ChecklistTest

SESSION_KEY = pytest.StashKey[VlcheckSession]()
NO_MODEL_REASON = (
    "no model given: pass --vl-model SPEC (e.g. --vl-model=tiny, clip, "
    "open_clip:ARCH@WEIGHTS, hf:DIR, scores:FILE, py:MODULE:FACTORY) or set "
    "vl_model in the ini file"
)


class VerdictFailure(AssertionError):
    """The pass rate is below the threshold."""

    def __init__(self, result: CapabilityResult) -> None:
        from pytest_vlcheck.report.verdict import verdict_line

        super().__init__(verdict_line(result))
        self.result = result


def add_capability_marks(item: pytest.Item, capability_parts: tuple[str, ...]) -> None:
    """``-m attribute`` selects by the capability's first segment, ``-k color`` by any (for
    checklist items and for Python tests marked ``@pytest.mark.vlcheck(capability=...)``)."""
    first = capability_parts[0]
    if first not in {line.split(":")[0] for line in item.config.getini("markers")}:
        item.config.addinivalue_line("markers", f"{first}: vlcheck capability '{first}/...'")
    item.add_marker("vlcheck")
    item.add_marker(first)
    item.extra_keyword_matches.update(capability_parts)


def result_properties(result: CapabilityResult) -> list[tuple[str, Any]]:
    """The ``vlcheck_*`` user properties (JUnit XML) of one result: its readable verdict
    (every testcase carries it, passing ones too), its reported fields
    (``results.REPORTED_FIELDS``, the columns ``matrix.csv`` has too; a field with no value,
    e.g. a test without a chance level or criterion, is left out rather than written ``None``
    or empty), then the rest."""
    from pytest_vlcheck.priors.evaluation import junit_properties
    from pytest_vlcheck.report.verdict import verdict_line

    fields = result.to_json()
    properties: list[tuple[str, Any]] = [("vlcheck_verdict", verdict_line(result))]
    properties += [
        (f"vlcheck_{name}", fields[name])
        for name in REPORTED_FIELDS
        if fields[name] not in (None, "")
    ]
    if result.fingerprint:
        properties.append(("vlcheck_fingerprint", result.fingerprint))
    if result.prior:
        properties.extend(junit_properties(result.prior))
    if result.unscored:
        reasons = ", ".join(f"{count} {reason}" for reason, count in result.unscored.items())
        properties.append(("vlcheck_unscored", f"{sum(result.unscored.values())} ({reasons})"))
    return properties


class ChecklistFile(pytest.File):
    """A checklist YAML file."""

    def collect(self) -> Iterator[ChecklistItem]:
        """One item per test per ``--vl-model`` (one model-less item when none is given)."""
        from pytest_vlcheck.checklist import load_checklist

        session = self.config.stash[SESSION_KEY]
        try:
            checklist = load_checklist(self.path, image_root=session.settings.image_root)
        except VlcheckUserError as exc:  # a checklist's mistake, or a kind's plug-in
            raise self.CollectError(exc.render()) from None
        models: list[str | None] = [s.name for s in session.settings.specs] or [None]
        for test in checklist.tests:
            for model in models:
                name = test.id if model is None else f"{test.id}[{model}]"
                yield ChecklistItem.from_parent(self, name=name, test=test, model=model)


class NotAChecklist(pytest.File):
    """A YAML file named on the command line that is not a checklist: says why."""

    def collect(self) -> Iterator[pytest.Item]:
        """Nothing: a collection error naming what is missing."""
        from pytest_vlcheck.parsing.yaml_lines import checklist_header_problem

        problem = checklist_header_problem(self.path) or f"{self.path}: not a checklist"
        raise self.CollectError(problem)  # the problem names the file and what is expected


def deciding_status(report: pytest.TestReport) -> Status | None:
    """The status of the report that decides a vlcheck row (the call's, or a setup's that
    did not pass: then its error is the row's): one rule for checklist items and ``vl_model``
    tests; None for the other reports."""
    if not (report.when == "call" or (report.when == "setup" and not report.passed)):
        return None
    return "error" if report.when == "setup" and report.failed else report.outcome


class ChecklistItem(pytest.Item):
    """One checklist test on one model: setup scores it, the call judges the pass rate."""

    def __init__(self, *, test: ChecklistTest, model: str | None, **kwargs: Any) -> None:
        # The node id is ``FILE::TEST[MODEL]``, given as the string pytest itself would build.
        # pytest >= 9.2 parses a string id into path, names and ``[params]`` (``hard[make]`` is
        # the name ``hard`` with params ``make``), as it parses the ids it reads back from its
        # cache and from reports; left to build the id from the name, it keeps ``hard[make]``
        # as one name, an id that equals none of those, so --lf, --ff and --nf never matched.
        kwargs.setdefault("nodeid", f"{kwargs['parent'].nodeid}::{kwargs['name']}")
        super().__init__(**kwargs)
        self.test = test
        self.model = model
        self.result: CapabilityResult | None = None
        self._add_capability_marks()
        known = self.test.known_failures.get(model or "")
        if known:  # a fail is xfailed; a pass is XPASS(strict) and fails the run
            self.add_marker(pytest.mark.xfail(reason=known, strict=True, raises=VerdictFailure))

    def _add_capability_marks(self) -> None:
        add_capability_marks(self, self.test.capability_parts)

    def setup(self) -> None:
        """Score the test (the model's whole plan on its first item); errors land here."""
        if self.model is None:
            pytest.skip(NO_MODEL_REASON)
        session = self.config.stash[SESSION_KEY]
        try:
            self.result = session.judge(self.test, self.model)
        except ModelLoadError as exc:
            first = session.load_failures.setdefault(self.model, self.nodeid)
            if first != self.nodeid:
                raise ModelLoadError(f"model '{self.model}' failed to load (see {first})") from None
            raise exc
        known = self.test.known_failures.get(self.model, "")
        self.user_properties.extend(result_properties(final(self.result, known_failure=known)))

    def runtest(self) -> None:
        """Pass when the pass rate reaches the threshold."""
        assert self.result is not None
        if self.result.status != "passed":
            raise VerdictFailure(self.result)

    def transport(
        self, report: pytest.TestReport, call: pytest.CallInfo[None]
    ) -> dict[str, Any] | None:
        """The result row for the report that decides this item's verdict (setup when it
        did not pass, else the call), as it travels to an xdist controller; None otherwise."""
        if report.when == "setup" and self.model is not None:
            report.duration = self.config.stash[SESSION_KEY].booked_seconds(
                self.test, self.model, report.duration
            )
        status = deciding_status(report)
        if self.model is None or status is None:
            return None
        error = call.excinfo.value if report.when == "setup" and call.excinfo is not None else None
        return self.outcome(status, error).to_json(with_outcomes=True)

    def outcome(self, status: Status, error: BaseException | None = None) -> CapabilityResult:
        """This item's result under pytest's verdict (``results.verdict.final``); for a test
        with no measurement, an empty one with the error's first line as the reason."""
        assert self.model is not None
        session = self.config.stash[SESSION_KEY]
        if self.result is not None:
            known = self.test.known_failures.get(self.model, "")
            return final(self.result, known_failure=known, outcome=status)
        threshold, file = session.settings.threshold, session.relative(self.test.file)
        empty = unmeasured(self.test, self.model, status, threshold, file)
        return final(empty, outcome=status, error=error)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        """A verdict, or a user error's own message, instead of a traceback."""
        from pytest_vlcheck.report.verdict import verdict_details, verdict_line

        if isinstance(excinfo.value, VerdictFailure):
            result = excinfo.value.result
            return "\n".join([verdict_line(result), *verdict_details(result)])
        if isinstance(excinfo.value, VlcheckUserError):
            return self._user_error(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def _repr_failure_py(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> Any:
        """pytest renders errors of the setup phase here, not through ``repr_failure``: a
        user error raised while the item is set up (a model that will not load, missing
        images, a score file without a pair) is one message there too."""
        if isinstance(excinfo.value, VlcheckUserError):
            return self._user_error(excinfo.value)
        return super()._repr_failure_py(excinfo, style=style)

    def _user_error(self, error: VlcheckUserError) -> str:
        where = f"{self.test.file}:{self.test.line}: test '{self.test.id}'"
        return f"{where}: {error.render()}"

    def reportinfo(self) -> tuple[Any, int, str]:
        """Point at the test's line in the YAML file."""
        return self.path, self.test.line - 1, self.name
