"""The cycle collector paused around work that makes many objects, and restored after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from faceoff.cycles import cycle_collection_paused


@pytest.fixture
def collector_on() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.enable()
    yield
    if not was_on:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_a_pause_is_lifted_after_it_even_when_its_work_raises() -> None:
    seen = []

    @cycle_collection_paused()
    def failing() -> None:
        seen.append(gc.isenabled())
        raise RuntimeError("the work failed")

    with pytest.raises(RuntimeError):
        failing()
    assert seen == [False] and gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_nested_pause_and_a_collector_already_off_are_left_as_found() -> None:
    with cycle_collection_paused():
        with cycle_collection_paused():
            pass
        assert not gc.isenabled()  # the inner pause did not lift the outer one
    assert gc.isenabled()
    gc.disable()
    with cycle_collection_paused():
        pass
    assert not gc.isenabled()
