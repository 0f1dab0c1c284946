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


def test_a_capture_read_whole_leaves_no_list_per_frame_for_the_collector(tmp_path):
    """The frames table's list cells (topics, diagnostics) are one list object per distinct value, so full
    collections (and the interpreter's at exit) do not walk two lists per frame; a Frame still gets lists of
    its own, and its bytes (read back from the file by place) are the frame's."""
    import sys
    from pathlib import Path

    from kafkalab.capture import read_capture

    bench = str(Path(__file__).resolve().parents[2] / "bench")
    sys.path.insert(0, bench)
    try:
        from capture_gen import write_chatty
    finally:
        sys.path.remove(bench)
    path = tmp_path / "chatty.pcap"
    write_chatty(path, 1 << 20, connections=12)
    cap = read_capture(path, progress=False)
    table = cap.frames
    topics, diagnostics = table["topics"].tolist(), table["diagnostics"].tolist()
    assert len(cap) > 1500
    assert len({id(cell) for cell in topics + diagnostics}) < len(cap) // 10
    first = next(i for i, cell in enumerate(topics) if cell)
    twin = next(i for i, cell in enumerate(topics) if i != first and cell == topics[first])
    assert topics[twin] is topics[first]
    frame = cap[first + 1]
    assert frame.topics == topics[first] and frame.topics is not topics[first]
    assert frame.diagnostics == diagnostics[first] and frame.diagnostics is not diagnostics[first]
    assert all(len(f.raw) == f.size + 4 and int.from_bytes(f.raw[:4], "big") == f.size for f in cap)
