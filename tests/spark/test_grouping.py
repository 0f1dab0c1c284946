"""Which connections share a decode task: one group per client host, both ends joined when the ports do not
say which end is the client (so the host's requests on other connections are always in its group)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kafkalab.spark.packets import index_unit, unit_pieces, unpack
from kafkalab.spark.pipeline import group_of_connections

CAPTURES = sorted((Path(__file__).parents[2] / "captures").glob("*.pcap"))


def key(a, b):
    """A connection's key: its two endpoints, the smaller (address, port) first, whichever way a packet goes."""
    return tuple(sorted([a, b]))


def test_a_units_index_rows_are_packed_once_per_connection_under_its_key():
    for rank, capture in enumerate(CAPTURES):
        rows, _, walk = index_unit((rank, str(capture), -1, -1))
        pieces, notes = unit_pieces((rank, str(capture), -1, -1))        # a whole file: no walk to report
        assert notes.num_rows == 0 and walk is None
        keys = [((a, p), (b, q)) for a, p, b, q in zip(*(pieces.column(c).to_pylist()
                                                         for c in ("ka_ip", "ka_port", "kb_ip", "kb_port")))]
        assert len(set(keys)) == len(keys) and sum(pieces.column("packets").to_pylist()) == rows.num_rows
        for i, k in enumerate(keys):
            packed = unpack(pieces.column("rows").slice(i, 1))
            ends = {key((s, sp), (d, dp)) for s, sp, d, dp in zip(*(packed.column(c).to_pylist()
                                                                   for c in ("src", "sport", "dst", "dport")))}
            assert ends == {k}
            assert sum(packed.column("len").to_pylist()) == pieces.column("bytes")[i].as_py()
            assert packed.column("pos").to_pylist() == sorted(packed.column("pos").to_pylist())


def test_ranges_of_a_file_index_its_rows_once_and_report_walks_that_meet():
    from kafkalab.pcap.split import plan_ranges, ranges_meet, read_layout

    capture = str(CAPTURES[0])
    whole, _, _ = index_unit((3, capture, -1, -1))
    nominal = plan_ranges(read_layout(capture), read_layout(capture).size // 4 + 13)
    walks, offsets = [], []
    for r in nominal:
        pieces, notes, walk = unit_pieces((3, capture, r.start, r.end))
        assert notes.num_rows == 0 and set(pieces.column("rank").to_pylist()) <= {3}
        assert walk.column("rows").null_count == 1 and walk.column("walk").to_pylist()[0][:2] == [3, r.start]
        walks.append(tuple(walk.column("walk").to_pylist()[0][2:]))
        offsets += [o for i in range(pieces.num_rows) for o in unpack(pieces.column("rows").slice(i, 1)).column("off")
                    .to_pylist()]
    assert len(nominal) >= 3 and ranges_meet(nominal, walks)
    assert sorted(offsets) == sorted(whole.column("off").to_pylist())     # every segment once, by file offset


def test_connections_of_one_client_host_share_a_group_and_other_hosts_do_not():
    one = key(("10.0.0.1", 40000), ("10.0.0.9", 9092))
    two = key(("10.0.0.9", 9093), ("10.0.0.1", 40001))       # the other direction, another broker port
    other = key(("10.0.0.2", 40000), ("10.0.0.9", 9092))
    groups = group_of_connections([one, two, other], [])
    assert groups[one] == groups[two] != groups[other]


def test_a_connection_whose_ports_do_not_name_the_client_joins_both_hosts_groups():
    a = key(("10.0.0.1", 40000), ("10.0.0.9", 9092))
    b = key(("10.0.0.2", 40000), ("10.0.0.9", 9092))
    unknown = key(("10.0.0.1", 5555), ("10.0.0.2", 6666))      # Kafka found by its traffic, either end
    assert len(set(group_of_connections([a, b], []).values())) == 2
    groups = group_of_connections([a, b, unknown], [])
    assert groups[a] == groups[b] == groups[unknown]
    assert len(set(group_of_connections([a, b, unknown], [5555]).values())) == 2     # -p 5555: 10.0.0.2 is the client


def test_decode_tasks_grow_with_the_capture_so_a_tasks_share_stays_bounded():
    from kafkalab.spark.pipeline import DECODE_TASK_BYTES, decode_width

    assert decode_width(10 << 20, 2) == 4                  # a small capture: two tasks per core
    assert decode_width(0, 1) == 2
    big = 20 * 10**9                                       # 20 GB on two cores: not four 5 GB shares
    width = decode_width(big, 2)
    assert width > 4 and big / width <= DECODE_TASK_BYTES
    assert decode_width(2 * big, 2) >= 2 * width - 2       # twice the capture, twice the tasks
    assert decode_width(big, 64) == max(128, width)         # a big cluster keeps two tasks per core
    assert all(decode_width(size, 2) % 2 == 0 for size in range(0, big, big // 37))   # whole rounds
    assert decode_width(7 * DECODE_TASK_BYTES - 1, 3) == 9


@pytest.mark.parametrize("side_by_side", [True, False])
def test_a_payload_buffer_holds_each_payload_where_it_says_and_the_tail(tmp_path, monkeypatch, side_by_side):
    """A decode task's one buffer of payloads, read by offset from several files (mapped side by side, or
    copied where that cannot be done), holds at each row's start exactly what reading that payload alone
    gives, and the tail at its place; slices of it are bytes, as slices of a mapped capture are."""
    import numpy as np

    from kafkalab.spark import payload_buffer as module
    from kafkalab.spark.packets import payloads

    if not side_by_side:
        monkeypatch.setattr(module, "_side_by_side", lambda *args: None)
    elif sys.platform != "linux":
        pytest.skip("files are mapped side by side on Linux only")
    files = []
    for k, content in enumerate((bytes(range(256)) * 20, b"kafka" * 100, b"")):
        path = tmp_path / f"f{k}"
        path.write_bytes(content)
        files.append(str(path))
    rank = np.array([1, 0, 0, 1, 0, 2], dtype=np.int64)
    off = np.array([3, 10, 5000, 0, 0, 0], dtype=np.int64)
    length = np.array([7, 0, 24, 5, 1, 0], dtype=np.int64)
    buffer, starts, tail_at = module.payload_buffer(files, rank, off, length, b"TAIL")
    alone = payloads(files, rank, off, length)
    assert [buffer[a:a + n] for a, n in zip(starts.tolist(), length.tolist())] == alone
    assert isinstance(buffer[0:4], bytes) and buffer[tail_at:tail_at + 4] == b"TAIL"
    assert np.frombuffer(buffer, dtype=np.uint8)[starts[2]] == (5000 % 256)
    if side_by_side:        # the files' pages, not copies: the buffer is bigger than its payloads
        assert len(buffer) >= 256 * 20 + 500
    assert len(module.payload_buffer(files, rank[:0], off[:0], length[:0])[1]) == 0
    with pytest.raises(ValueError, match="f1: shorter than when it was indexed"):
        module.payload_buffer(files, np.array([1]), np.array([498]), np.array([3]))


def test_read_tasks_are_sized_to_the_capture_and_the_cores():
    from kafkalab.spark.plan import OPEN_COST, TARGET_BYTES, read_task_bytes

    assert read_task_bytes(2 * 10**9, 2) == TARGET_BYTES          # a big capture: the largest tasks
    assert read_task_bytes(100 << 20, 2) == 25 << 20             # a small one: two tasks per core
    assert read_task_bytes(100 << 20, 1) == 50 << 20
    assert read_task_bytes(1 << 20, 2) == OPEN_COST == read_task_bytes(0, 8)     # never below a file's cost


def test_small_files_share_a_read_task_and_a_large_files_ranges_have_one_each(tmp_path):
    from kafkalab.spark.plan import OPEN_COST, read_tasks, unit_bytes

    small = []
    for k in range(10):
        path = tmp_path / f"small-{k}.pcap"
        path.write_bytes(b"x" * (100 + k))
        small.append((k, str(path), -1, -1))
    target = 4 * OPEN_COST
    ranges = [(10, str(tmp_path / "big.pcap"), start, start + target - 1) for start in range(24, 3 * target, target)]
    tasks = read_tasks(small + ranges, target)
    assert sorted(u for task in tasks for u in task) == sorted(small + ranges)          # every unit once
    assert [task for task in tasks if any(u[2] >= 0 for u in task)] == [[r] for r in ranges]
    packed = [task for task in tasks if all(u[2] < 0 for u in task)]
    assert sorted(map(len, packed)) == [2, 4, 4]            # a small file counts as a file's opening cost
    assert all(sum(max(unit_bytes(u), OPEN_COST) for u in task) <= target for task in packed)


def test_a_kept_frame_gives_its_rows_until_released(spark_local):
    """In local mode a kept frame is a local checkpoint (one copy of each row, no column buffers); released,
    its blocks are gone."""
    from kafkalab.spark.keep import keep, release

    def held():
        return set(spark_local.sparkContext._jsc.getPersistentRDDs().keys())

    before = held()
    frame = spark_local.range(0, 1000, 1, 4).selectExpr("id", "id * 2 AS twice", "repeat('x', id % 7) AS pad")
    kept = keep(frame)
    assert len(held() - before) == 1
    assert kept._jdf.queryExecution().logical().getClass().getSimpleName() == "LogicalRDD"
    assert sorted(kept.where("id % 3 = 0").collect()) == sorted(frame.where("id % 3 = 0").collect())
    release(kept)
    assert held() - before == set()
