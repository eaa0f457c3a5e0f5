"""Where a finished run goes: each output is a ``Sink`` that takes the ``Run``.

The plugin's end-of-session hooks, the ``vlcheck`` command and ``evaluate`` all hand their
run to the same sinks, so the files, the terminal text and the logged numbers agree however
the run was started; a new output is one class with ``emit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_vlcheck.errors import VlcheckUserError

if TYPE_CHECKING:  # numpy: the plugin imports the sinks in every pytest run
    from pytest_vlcheck.engine.runner.stats import ScoringStats
    from pytest_vlcheck.results import CapabilityResult
    from pytest_vlcheck.run.outcome import Run

Segment = tuple[str, "str | None"]


class Sink(Protocol):
    """One output of a finished run."""

    def emit(self, run: Run) -> None:
        """Write, print or log ``run``."""
        ...


class TerminalOut(Protocol):
    """What the terminal sink writes through (pytest's terminal reporter has these)."""

    def write(self, text: str, **markup: bool) -> None: ...
    def line(self, text: str = "", **markup: bool) -> None: ...
    def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None: ...


def stats_line(name: str, stats: ScoringStats) -> str | None:
    """One model's scoring counts, or None when it scored nothing."""
    if not (stats.model_calls or stats.cached):
        return None
    line = (
        f"[{name}] {stats.images_encoded} images, {stats.texts_encoded} texts, "
        f"{stats.pairs_scored} pairs in {stats.model_calls} model calls, {stats.cached} cached; "
        f"{stats.model_seconds:.1f} s in the model, {stats.load_seconds:.1f} s waiting for images"
    )
    if stats.images_on_device or stats.images_decode_fallback:  # --vl-decode gpu only
        line += (
            f"; {stats.images_on_device} decoded on the device, "
            f"{stats.images_decode_fallback} on the CPU"
        )
    return line


def matrix_segments(run: Run, width: int) -> list[list[Segment]]:
    """The capability matrix (capability rows x model columns) as coloured line segments."""
    from pytest_vlcheck.report import build_report, matrix_lines

    report = build_report(run.models, run.results, run.errors)
    return matrix_lines(report, width=width)


@dataclass
class TerminalMatrix:
    """The matrix, each model's stats line, the warnings on items a baseline did not gate
    and where the report went, printed through ``out``."""

    out: TerminalOut
    width: int = 100
    saved: bool = True
    """Whether the run wrote its files (not interrupted): a ``--vl-save-baseline`` run then
    says where its baseline went and how many entries it holds."""

    def emit(self, run: Run) -> None:
        """Print the run's summary (nothing when it has no results)."""
        from pytest_vlcheck.gates.wording import gate_lines, not_gated_warnings
        from pytest_vlcheck.models.checkpoints import unstepped

        if not run.results:
            return
        self.out.write_sep("=", "vlcheck capability matrix")
        for segments in matrix_segments(run, self.width):
            for text, colour in segments:
                self.out.write(text, **({colour: True} if colour else {}))
            self.out.line("")
        for name, stats in run.stats.items():
            line = stats_line(name, stats)
            if line is not None:
                self.out.line(line)
        for name, answer in run.vqa_answers.items():
            self.out.line(f"[{name}] vqa answer: {answer}")
        settings = run.settings
        no_step = unstepped(settings.specs)
        if no_step:
            self.out.line(no_step, yellow=True, bold=True)
        gated = gate_lines(run.results)
        if gated:
            self.out.write_sep("-", "vlcheck gate")
            for line in gated:
                self.out.line(line, red="regressed:" in line)
        rootdir = settings.rootdir or Path.cwd()
        for warning in not_gated_warnings(run.results, settings.gates, rootdir):
            self.out.line(warning, yellow=True, bold=True)
        if settings.report_dir is not None:
            self.out.line(f"vlcheck report written to {settings.report_dir}")
        if settings.save_baseline is not None and self.saved:
            self.out.line(baseline_line(settings.save_baseline, run.results))


def baseline_line(path: Path, results: tuple[CapabilityResult, ...]) -> str:
    """Where the baseline went, how many entries it holds and how many this run wrote (an
    errored or skipped test keeps its old entry)."""
    from pytest_vlcheck.gates.baseline import Baseline, BaselineError
    from pytest_vlcheck.results import MEASURED

    written = sum(1 for r in results if r.status in MEASURED and r.n > 0)
    try:
        held = f"{len(Baseline.load(path).entries)} entries, "
    except BaselineError:
        held = ""
    return f"vlcheck baseline written to {path}: {held}{written} from this run"


@dataclass(frozen=True)
class ReportFolder:
    """``matrix.json``, ``matrix.md``, ``matrix.csv``, ``report.html`` and ``samples.jsonl``
    in ``folder``: one run's set, written under the folder's lock, its manifest last (a
    killed run or a second writer cannot leave a mix that a reader takes for one run)."""

    folder: Path

    def emit(self, run: Run) -> None:
        """Write each file atomically, then the manifest naming them."""
        from pytest_vlcheck.report import REPORT_FILES, write_report
        from pytest_vlcheck.results.manifest import new_run_id, write_manifest, writing
        from pytest_vlcheck.results.samples import SAMPLES, sample_rows, write_samples

        with writing(self.folder):
            write_report(
                self.folder, run.models, run.results, errors=run.errors, run_block=run.run_block()
            )
            write_samples(self.folder / SAMPLES, sample_rows(run.results))
            write_manifest(self.folder, (*REPORT_FILES, SAMPLES), new_run_id())


@dataclass(frozen=True)
class BaselineFile:
    """Merge the run's measured tests into the baseline at ``path``."""

    path: Path

    def emit(self, run: Run) -> None:
        """Merge, with the run's conditions and the root directory's git commit."""
        from pytest_vlcheck.gates.baseline import baseline_entries, git_commit, save_baseline
        from pytest_vlcheck.gates.conditions import run_conditions

        settings = run.settings
        specs = {spec.name: spec.text for spec in settings.specs}
        conditions = run_conditions(settings.model_options)
        commit = git_commit(settings.rootdir or Path.cwd())
        save_baseline(self.path, baseline_entries(run.results, specs, conditions, commit))


class LoggingFailed(VlcheckUserError):
    """A logger that could not take the run's numbers (one line per logger); raised after
    every logger was tried, the files having been written before."""


@dataclass(frozen=True)
class Loggers:
    """Every logger of the run (``--vl-log``, ``log=``): started, handed each model's
    scalars at the checkpoint's step (else the run's), flushed. Emitted after the files, so
    a logger that cannot start or fails costs no report; a failure is one line, not the
    logger library's traceback."""

    specs: tuple[Any, ...]

    def emit(self, run: Run) -> None:
        """Log the run's numbers; raise ``LoggingFailed`` naming each logger that failed."""
        failures = [line for spec in self.specs if (line := _logged(spec, run))]
        if failures:
            raise LoggingFailed("; ".join(failures))


def _logged(spec: Any, run: Run) -> str | None:
    """Log ``run`` with the logger ``spec`` names; None, or why it could not."""
    from pytest_vlcheck.loggers import LoggerSpecError, open_logger
    from pytest_vlcheck.loggers.specs import first_line

    shown = spec if isinstance(spec, str) else getattr(spec, "__name__", type(spec).__name__)
    try:
        logger = open_logger(spec, "logger")
    except LoggerSpecError as exc:
        return str(exc)
    try:
        try:
            for scalars, step in run.scalars_per_model():
                logger.log(scalars, step)
        finally:
            logger.close()
    except Exception as exc:  # the logger library's or the filesystem's: one line
        return (
            f"logger {shown}: could not log the run's numbers ({first_line(exc)}); expected a "
            "logger that can write (the report files were written)"
        )
    return None


def file_sinks(run: Run, *, baseline: bool = True) -> list[Sink]:
    """The outputs the settings ask for, files first: the report folder (report files and
    samples), when ``baseline`` the baseline to merge into, then the loggers."""
    settings = run.settings
    sinks: list[Sink] = []
    if settings.report_dir is not None:
        sinks.append(ReportFolder(settings.report_dir))
    if baseline and settings.save_baseline is not None:
        sinks.append(BaselineFile(settings.save_baseline))
    if settings.log_specs:
        sinks.append(Loggers(settings.log_specs))
    return sinks


def emit_all(run: Run, sinks: list[Sink]) -> None:
    """Hand the run to every sink, in order."""
    for sink in sinks:
        sink.emit(run)


class LoggingFailedWarning(UserWarning):
    """``evaluate``'s word that a logger could not take the numbers: the run it returns is
    whole and its files are written, so a training loop goes on."""


def emit_all_warning_on_loggers(run: Run, sinks: list[Sink]) -> None:
    """``emit_all``, a logger's failure a one-line ``LoggingFailedWarning``."""
    import warnings

    try:
        emit_all(run, sinks)
    except LoggingFailed as exc:
        warnings.warn(LoggingFailedWarning(str(exc)), stacklevel=3)
