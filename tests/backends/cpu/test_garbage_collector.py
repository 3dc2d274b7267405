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


def _frozen(obj) -> bool:
    """A tracked object frozen by ``gc.freeze`` sits in the permanent generation, which ``gc.get_objects`` omits."""
    return not any(o is obj for o in gc.get_objects())


def test_a_freeze_made_by_the_caller_is_kept():
    # The freeze count alone cannot show this: frozen objects that die (frames, temporaries) leave the
    # permanent generation, so the count may fall between two reads. A probe object's membership can.
    probe = [object()]
    gc.freeze()
    try:
        assert _frozen(probe)
        with relaxed_gc():
            assert _frozen(probe)
        assert _frozen(probe) and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert not _frozen(probe)
