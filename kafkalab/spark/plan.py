"""What a distributed read does on the driver around its index tasks: the capture's files, their order, and
the byte ranges the tasks read (planned before any task runs, settled from what the tasks found).

Owns: expanding inputs (files, globs, directories) into capture files, ranking them in capture-time order (the
order :func:`kafkalab.capture.capture.in_capture_order` gives, so a connection that crosses rotated files is
stitched as the single-process engine stitches it), and cutting them into read units. Only file heads and
sizes are read here: the driver's memory does not grow with the capture.

A unit is ``(rank, path, start, end)``: the records whose header starts in ``[start, end)`` of the file ranked
``rank`` (``start == end == -1``: the whole file, read by one task: gzip, small files, a pcapng file whose
head holds no sound interface block). Classic pcap and pcapng files larger than the target are cut with
:mod:`kafkalab.pcap.split`; each range is read as the file's head (pcap: its header; pcapng: its section header
and the interface blocks right after it) followed by the range's records. A file whose ranges do not meet
exactly (a false boundary or a damaged file, or in pcapng a second section or an interface described after
packets) is read whole instead: each range's index task resolves its own start and reports where its walk over
the range's records stopped, and once they have run, :func:`settle` checks that the ranges of each file meet
(:func:`~kafkalab.pcap.split.ranges_meet`). That check is left to the tasks because it means walking every
record, which the driver must not do, and the index walks them anyway.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from kafkalab.capture.capture import in_capture_order
from kafkalab.pcap import CaptureError
from kafkalab.pcap.split import ByteRange, plan_ranges, ranges_meet, read_layout

# The capture bytes a read task indexes at most, and what a file counts for when small files share a task (its
# open and head cost about as much as reading this many bytes). A read task costs Spark and its Python worker
# some 0.1 s of their own: a 2 GB capture rotated into 8 files, read on local[2] in 32 tasks of 64 MB, took 5.5 s
# from the read's start to the decode's, in 16 tasks of 128 MB 4.6 s, in 8 of 256 MB 4.4 s.
TARGET_BYTES = 256 << 20
OPEN_COST = 4 << 20
_GZIP = b"\x1f\x8b"


@dataclass
class Plan:
    """The capture's files in capture-time order, the read units, and what was wrong with the other inputs."""
    files: list[str]
    units: list[tuple[int, str, int, int]]
    problems: list[str] = field(default_factory=list)
    target: int = 0                 # the capture bytes a read task takes on (see :func:`read_tasks`)


def expand(inputs) -> list[str]:
    """Capture files named by ``inputs`` (paths, globs, directories: their files, sorted), without repeats."""
    inputs = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    found: list[str] = []
    for item in map(os.fspath, inputs):
        if os.path.isdir(item):
            found += sorted(os.path.join(item, name) for name in os.listdir(item)
                            if os.path.isfile(os.path.join(item, name)) and not name.startswith("."))
        elif any(ch in item for ch in "*?[") and not os.path.exists(item):
            matches = sorted(glob.glob(item))
            if not matches:
                raise CaptureError(f"no file matches {item!r}")
            found += matches
        elif os.path.exists(item):
            found.append(item)
        else:
            raise CaptureError(f"no such capture file: {item!r}")
    if not found:
        raise CaptureError(f"no capture files in {', '.join(map(os.fspath, inputs)) or 'the input'}")
    return list(dict.fromkeys(found))


def readable(path: str) -> str | None:
    """None for a file a task can read as a capture, else what is wrong with it (one line)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        return f"cannot read {path!r}: {exc.strerror or exc}"
    if head[:2] == _GZIP:
        return None
    try:
        read_layout(path)
    except CaptureError as exc:
        return str(exc)
    return None


def splittable(path: str, target_bytes: int) -> bool:
    """Whether the file is cut into ranges: larger than the target, and with a head every range can be given."""
    try:
        layout = read_layout(path)
    except CaptureError:
        return False                        # gzip: one task reads the whole file
    if layout.format == "pcapng" and not layout.interfaces:
        return False                        # no interface up front (or a damaged head): one task, as the reader sees it
    return layout.size > target_bytes and layout.first_record < layout.size


def read_task_bytes(total: int, cores: int) -> int:
    """The capture bytes a read task takes on, for a capture of ``total`` bytes on ``cores`` cores, as Spark
    sizes its file splits: :data:`TARGET_BYTES` at most, and less for a small capture, so that there are
    two tasks per core (a task that ends late then idles one core for half as long), but never below
    :data:`OPEN_COST`."""
    return int(min(TARGET_BYTES, max(OPEN_COST, -(-total // (2 * max(1, cores))))))


def plan(inputs, target_bytes: int | None = None, cores: int = 1) -> Plan:
    """The files (in capture-time order) and nominal read units of a capture, with files larger than
    ``target_bytes`` cut into ranges of about that size (None: :func:`read_task_bytes` for ``cores``); raises
    :class:`CaptureError` when no input is a readable capture."""
    problems, good = [], []
    for path in expand(inputs):
        problem = readable(path)
        (problems if problem else good).append(problem or path)
    if not good:
        raise CaptureError(problems[0] if len(problems) == 1 else "no readable capture file: " + "; ".join(problems))
    files = [os.fspath(p) for p in in_capture_order(good)]
    if target_bytes is None:
        target_bytes = read_task_bytes(sum(os.path.getsize(path) for path in files), cores)
    units = []
    for rank, path in enumerate(files):
        if splittable(path, target_bytes):
            units += [(rank, path, r.start, r.end) for r in plan_ranges(read_layout(path), target_bytes)]
        else:
            units.append((rank, path, -1, -1))
    return Plan(files, units, problems, target_bytes)


def unit_bytes(unit: tuple) -> int:
    """The capture bytes of a read unit (a range's span, or a whole file's size)."""
    rank, path, start, end = unit
    return end - start if start >= 0 else os.path.getsize(path)


def read_tasks(units: list, target_bytes: int) -> list[list]:
    """The units packed into read tasks: the largest first, each into the task being filled while it stays
    within ``target_bytes`` (a file counting :data:`OPEN_COST` at least), else into a new one, as Spark packs
    file splits. A range of a large file is about ``target_bytes`` and has a task of its own; many small files
    share one, where a task each would cost more in Spark's and Python's per-task work than their reading."""
    tasks: list[list] = []
    filled = 0
    for size, unit in sorted(((max(unit_bytes(u), OPEN_COST), u) for u in units), key=lambda p: (-p[0], p[1])):
        if tasks and filled + size <= target_bytes:
            tasks[-1].append(unit)
            filled += size
        else:
            tasks.append([unit])
            filled = size
    return tasks


def settle(units: list, walks) -> tuple[list, set[int]]:
    """The units as read, once the index tasks have walked the ranges (``walks``: ``[rank, nominal start,
    resolved start, where the walk stopped]`` for each range), and the ranks of the files read whole because
    their ranges do not meet (:func:`~kafkalab.pcap.split.ranges_meet`): such a file becomes one whole-file
    unit, to be indexed again; the ranges of the others become their resolved ``(start, stop)`` (empty ones
    dropped)."""
    walked = {(rank, nominal): (start, end) for rank, nominal, start, end in walks}
    by_file: dict[int, list] = {}
    for unit in units:
        if unit[2] >= 0:
            by_file.setdefault(unit[0], []).append(unit)
    out, whole = [u for u in units if u[2] < 0], set()
    for rank, ranges in by_file.items():
        got = [walked.get((rank, start), (-1, -1)) for _, _, start, _ in ranges]
        if ranges_meet([ByteRange(path, start, end) for _, path, start, end in ranges], got):
            out += [(rank, path, start, end) for (_, path, _, _), (start, end) in zip(ranges, got) if end > start]
        else:
            out.append((rank, ranges[0][1], -1, -1))
            whole.add(rank)
    return sorted(out), whole
