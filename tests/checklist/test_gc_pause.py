"""The loader's collector pause: the collector is back as the caller had it, and what the
load built skips the young generations without being frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pytest_vlcheck.parsing.gc_pause import gc_paused


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's collector as it was, whatever a test leaves."""
    was_enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector")
def test_the_collector_is_off_inside_and_back_on_after_an_error() -> None:
    gc.enable()
    with pytest.raises(ValueError), gc_paused():
        assert not gc.isenabled()
        raise ValueError("a bad line")
    assert gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_a_caller_that_turned_it_off_keeps_it_off() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector")
def test_what_the_load_built_is_in_the_oldest_generation_and_not_frozen() -> None:
    gc.enable()
    gc.collect()
    with gc_paused():
        built = [[str(index)] for index in range(20_000)]  # lists: always tracked
    gc.disable()  # the generations as the pause left them, before any collection
    young = {id(obj) for generation in (0, 1) for obj in gc.get_objects(generation)}
    assert id(built[0]) not in young and id(built[-1]) not in young
    assert any(obj is built[0] for obj in gc.get_objects(2))
    assert gc.get_freeze_count() == 0  # still collectable: a full collection frees garbage
    cycle: list[object] = []
    cycle.append(cycle)
    with gc_paused():
        del cycle
    assert gc.collect() >= 1


@pytest.mark.usefixtures("collector")
def test_objects_someone_else_froze_stay_frozen() -> None:
    gc.enable()
    gc.freeze()
    frozen = gc.get_freeze_count()
    with gc_paused():
        _ = [{} for _ in range(1_000)]
    assert gc.get_freeze_count() == frozen
