"""What every fuzz target shares: the seed corpus, a Hypothesis strategy of hostile mutations of it, the
time bound, and a tally per layer (inputs, crashes, hangs, peak memory).

In CI each target runs ``KAFKALAB_FUZZ_EXAMPLES`` inputs (default 200: seconds per layer). Longer campaigns:
``KAFKALAB_FUZZ_EXAMPLES=20000 KAFKALAB_FUZZ_LOG=fuzz.jsonl pytest tests/fuzz -p no:randomly``; the log gets
one line per layer. An input slower than ``HANG_SECONDS`` fails as a hang. Any input that breaks a target
becomes a ``bug-*`` seed (see make_corpus.py), so CI replays it on every run.
"""
from __future__ import annotations

import json
import os
import resource
import struct
import time
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

CORPUS = Path(__file__).resolve().parent / "corpus"
EXAMPLES = int(os.environ.get("KAFKALAB_FUZZ_EXAMPLES", "200"))
HANG_SECONDS = float(os.environ.get("KAFKALAB_FUZZ_HANG_SECONDS", "10"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])
TALLY: dict[str, dict] = {}

#: int32 values that break code trusting a length, count or offset delta
HOSTILE_INTS = (0, 1, -1, -2, -3, 7, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, -0x80000000,
                1 << 20, 100 << 20, 1_000_000)


def seeds(layer: str) -> list[tuple[str, bytes]]:
    return [(p.stem, p.read_bytes()) for p in sorted((CORPUS / layer).glob("*.bin"))]


def _apply(seed: bytes, edits) -> bytes:
    data = bytearray(seed)
    for op, where, value, blob in edits:
        n = len(data)
        at = where % n if n else 0
        if op == "flip" and n:
            data[at] ^= 1 << (value % 8)
        elif op == "byte" and n:
            data[at] = value & 0xFF
        elif op == "int32" and n >= 4:
            at = min(at, n - 4)
            struct.pack_into(">i", data, at, HOSTILE_INTS[value % len(HOSTILE_INTS)])
        elif op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = blob
        elif op == "delete":
            del data[at:at + 1 + value % 16]
        elif op == "duplicate" and n:
            data[at:at] = data[at:at + 1 + value % 64]
    return bytes(data)


EDIT = st.tuples(st.sampled_from(("flip", "byte", "int32", "truncate", "insert", "delete", "duplicate")),
                 st.integers(0, 1 << 24), st.integers(0, 1 << 16), st.binary(max_size=12))


def mutants(layer: str):
    """(seed name, mutated bytes): a seed with 0 to 6 hostile edits (0: the seed itself is replayed)."""
    pool = seeds(layer)
    return st.tuples(st.sampled_from(pool), st.lists(EDIT, max_size=6)).map(
        lambda pair: (pair[0][0], _apply(pair[0][1], pair[1])))


@contextmanager
def tallied(layer: str, data: bytes):
    """Count the input; a crash or a hang is counted and re-raised, the peak memory noted."""
    tally = TALLY.setdefault(layer, {"layer": layer, "inputs": 0, "bytes": 0, "crashes": 0, "hangs": 0,
                                     "slowest_s": 0.0, "peak_rss_mib": 0.0})
    tally["inputs"] += 1
    tally["bytes"] += len(data)
    start = time.monotonic()
    try:
        yield
    except BaseException:
        tally["crashes"] += 1
        raise
    finally:
        elapsed = time.monotonic() - start
        tally["slowest_s"] = round(max(tally["slowest_s"], elapsed), 3)
        tally["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if elapsed > HANG_SECONDS:
        tally["hangs"] += 1
        raise AssertionError(f"{layer}: one input took {elapsed:.1f} s (a hang)")


def write_log() -> None:
    path = os.environ.get("KAFKALAB_FUZZ_LOG")
    if path and TALLY:
        with open(path, "a") as f:
            for tally in TALLY.values():
                f.write(json.dumps(tally) + "\n")
