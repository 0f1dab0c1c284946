"""Damaged captures never raise: the shipped captures with bits flipped, bytes overwritten, lengths replaced by
hostile values, ranges duplicated or the file cut short, read by both readers (bulk and general), with every
table built, every frame's tree made and the statistics computed. Either the file is refused with a
CaptureError (a clear message) or whatever is left is decoded with diagnostics.

Seeded, so a failure reproduces; the kinds of damage are those that found real bugs (an unknown API key's
response, a record timestamp pandas cannot hold)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

import kafkalab.capture.capture as capture_module
from kafkalab.capture import iter_frames, read_capture
from kafkalab.capture.stats import CaptureStats
from kafkalab.pcap import CaptureError

CAPTURES = sorted((Path(__file__).resolve().parents[2] / "captures").glob("*.pcap"))
HOSTILE = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x00\x00\x00\x00", b"\x80\x00\x00\x00", b"\x00\x00\x10\x00"]


def damage(data: bytes, rnd: random.Random) -> bytes:
    out = bytearray(data)
    kind = rnd.randrange(5)
    if kind == 0:                                   # bit flips anywhere
        for _ in range(rnd.randrange(1, 50)):
            at = rnd.randrange(len(out))
            out[at] ^= 1 << rnd.randrange(8)
    elif kind == 1:                                 # cut short
        del out[rnd.randrange(len(out)):]
    elif kind == 2:                                 # a run of garbage
        at = rnd.randrange(24, len(out))
        out[at:at + rnd.randrange(1, 200)] = rnd.randbytes(rnd.randrange(1, 200))
    elif kind == 3:                                 # hostile 32-bit values (lengths, counts, sizes)
        for _ in range(rnd.randrange(1, 20)):
            at = rnd.randrange(24, len(out))
            out[at:at + 4] = rnd.choice(HOSTILE)
    else:                                           # a range of the file repeated somewhere else
        at, source = rnd.randrange(24, len(out)), rnd.randrange(24, len(out))
        out[at:at] = out[source:source + rnd.randrange(1, 3000)]
    return bytes(out)


@pytest.mark.parametrize("seed", range(8))
def test_damaged_captures_are_refused_or_decoded_never_raise(seed, tmp_path):
    rnd = random.Random(seed)
    originals = {path: path.read_bytes() for path in CAPTURES}
    path = tmp_path / "damaged.pcap"
    for _ in range(25):
        source = rnd.choice(CAPTURES)
        path.write_bytes(damage(originals[source], rnd))
        capture_module.BULK = rnd.random() < 0.5
        try:
            cap = read_capture(path, progress=False)
        except CaptureError as exc:
            assert str(exc)
            continue
        finally:
            capture_module.BULK = True
        for table in (cap.frames, cap.exchanges, cap.records, cap.connections):
            assert table is not None
        frames = list(cap)
        for frame in frames[:40]:
            assert frame.tree is not None or frame.body is None
        stats = CaptureStats()
        stats.add(frames)
        stats.report(top=5)
        assert len(list(iter_frames(path))) == len(frames)
