"""gc_paused: the collector is off while a capture is read, and what the read made is not walked again when
it comes back on (it goes straight to the oldest generation), yet garbage cycles are still collected."""
import gc

from kafkalab.capture.capture import gc_paused


class _Node:
    def __init__(self):
        self.other = None


def _in_generation(obj, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation))


def test_objects_made_while_paused_go_to_the_oldest_generation():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        kept = [_Node() for _ in range(10)]
    assert gc.isenabled()
    assert _in_generation(kept[0], 2)
    assert not _in_generation(kept[0], 0)


def test_garbage_cycles_made_while_paused_are_still_collected():
    with gc_paused():
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        del a, b
    assert gc.collect() >= 2


def test_a_programs_own_frozen_objects_stay_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            young = _Node()
        assert gc.get_freeze_count() == frozen          # not unfrozen behind the program's back
        assert _in_generation(young, 0)
    finally:
        gc.unfreeze()
