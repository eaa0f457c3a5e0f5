"""Lines CI needs: where no terminal is (a log, ``CI`` set) a model's image encoding says when
it starts and ends, with a heartbeat between on long runs; a ``--vl-save-baseline`` run says
where the baseline went and how many entries it holds; a model that fails to load is its own
exit status (10) with one line per model."""

from __future__ import annotations

import json

import pytest
from helpers.colour_project import CHECKLIST, colour_project

from pytest_vlcheck.engine.runner.progress import HEARTBEAT_S, Heartbeat, LogWriter, tracked
from pytest_vlcheck.model_required import MODEL_NOT_LOADED

MODEL = "--vl-model=py:colour_model:make"


def test_a_heartbeat_writes_whole_lines_at_start_every_interval_and_end() -> None:
    written: list[str] = []
    ticks = iter([0.0, 10.0, HEARTBEAT_S + 1, HEARTBEAT_S + 5, 2 * HEARTBEAT_S + 2, 70.0])
    beat = Heartbeat("clip", 400, written.append, clock=lambda: next(ticks))
    for _ in range(4):
        beat.advance(100)  # at 10 s nothing, at 31 s a line, at 35 s nothing, at 62 s done
    beat.close()
    assert written == [
        "\n[clip] encoding 400 images\n",
        "[clip] 200/400 images, 6.5 images/s, ETA 31 s\n",
        "[clip] encoded 400/400 images in 70.0 s\n",
    ]


def test_a_log_writer_gets_a_heartbeat_and_a_terminal_a_redrawn_line() -> None:
    lines: list[str] = []
    with tracked("clip", 3, LogWriter(lines.append)) as progress:
        assert isinstance(progress, Heartbeat)
    with tracked("clip", 3, lines.append) as progress:
        assert progress is not None and not isinstance(progress, Heartbeat)
    with tracked("clip", 0, LogWriter(lines.append)) as progress:
        assert progress is None  # nothing to encode: no line


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return colour_project(pytester, CHECKLIST)


def test_ci_logs_say_when_a_model_encodes_and_where_the_baseline_went(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = project.runpytest_subprocess(MODEL, "--vl-save-baseline=base.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stderr.fnmatch_lines(
        ["[[]make[]] encoding 3 images", "[[]make[]] encoded 3/3 images in * s"]
    )
    entries = json.loads((project.path / "base.json").read_text())["entries"]
    result.stdout.fnmatch_lines(
        [f"vlcheck baseline written to base.json: {len(entries)} entries, 5 from this run"]
    )
    project.makefile(".yaml", extra=CHECKLIST.replace("id: pick", "id: pick2"))
    again = project.runpytest_subprocess(MODEL, "--vl-save-baseline=base.json", "-k", "pick2")
    again.stdout.fnmatch_lines(
        ["vlcheck baseline written to base.json: 6 entries, 1 from this run"]
    )


BROKEN = "--vl-model=broken=open_clip:tiny.json@junk.safetensors"


def _broken(project: pytest.Pytester) -> None:
    from pytest_vlcheck.tiny import TINY_CONFIG

    (project.path / "tiny.json").write_text(TINY_CONFIG.read_text())
    (project.path / "junk.safetensors").write_bytes(b"garbage")  # no header to check early


def test_a_model_that_fails_to_load_is_its_own_exit_status(project: pytest.Pytester) -> None:
    _broken(project)
    result = project.runpytest(BROKEN, MODEL, "-k", "color or hard")
    assert result.ret == MODEL_NOT_LOADED
    result.stdout.fnmatch_lines(
        [
            "vlcheck: model 'broken' failed to load, so its items errored (the first, "
            "checks.yaml::color[[]broken[]], says why): exit status 10",
        ]
    )
    text = result.stdout.str()
    assert "test 'color': cannot load model 'open_clip:tiny.json@junk.safetensors': " in text
    assert "test 'hard': model 'broken' failed to load (see checks.yaml::color[broken])" in text


def test_under_xdist_too(project: pytest.Pytester) -> None:
    # the workers' load failures reach the controller whatever the backend: a ``py:`` factory
    # that does not exist fails to load without importing open_clip in each worker (~14 s of
    # CPU apiece); the open_clip failure itself is the test above
    broken = "--vl-model=broken=py:colour_model:missing"
    result = project.runpytest_subprocess(broken, "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == MODEL_NOT_LOADED
    result.stdout.fnmatch_lines(["vlcheck: model 'broken' failed to load, so its items errored*"])
