import gc

import pytest

from gaca.backends.cpu.garbage_collector import RUN_THRESHOLDS, relaxed_gc


def test_relaxed_gc_raises_thresholds_and_restores_them():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with relaxed_gc():
        assert gc.get_threshold() == RUN_THRESHOLDS
        assert gc.get_freeze_count() > 0
        with relaxed_gc():  # nested: the inner exit must not unfreeze the outer block's objects
            pass
        assert gc.get_freeze_count() > 0 and gc.get_threshold() == RUN_THRESHOLDS
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_relaxed_gc_restores_after_an_error():
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with pytest.raises(KeyError):
        with relaxed_gc():
            raise KeyError("boom")
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_a_freeze_made_by_the_caller_is_kept():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with relaxed_gc():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
