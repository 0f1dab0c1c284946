"""A pcapng timestamp out of range (one flipped bit, or a resolution of whole seconds) is annotated on its
packet; readers, ``kafkalab decode``/``stats`` and the pandas tables go on."""
from __future__ import annotations

import random
import struct
import subprocess
import sys

import pytest

from kafkalab import read_capture
from kafkalab.pcap import iter_link_records
from tests.capture.builders import pcapng_bytes, write_golden_pcap
from tests.capture.test_bulk_reader import as_pcapng


@pytest.mark.parametrize("tsresol", [None, 0])
def test_out_of_range_pcapng_timestamp_is_annotated_not_fatal(tmp_path, tsresol):
    """One flipped bit in a timestamp (or a resolution of whole seconds) lands beyond int64 nanoseconds."""
    write_golden_pcap(tmp_path / "g.pcap")
    data = bytearray(as_pcapng((tmp_path / "g.pcap").read_bytes(), random.Random(1)))
    pos = 0
    while struct.unpack_from("<I", data, pos)[0] != 6:                # the first enhanced packet block
        pos += struct.unpack_from("<I", data, pos + 4)[0]
    data[pos + 15] ^= 0x80                                           # the timestamp's top bit
    bad = tmp_path / "bad.pcapng"
    bad.write_bytes(bytes(data))
    frames = read_capture(bad).frames
    assert len(frames) > 100 and frames["time"].notna().all()
    for command in ("decode", "stats"):
        done = subprocess.run([sys.executable, "-m", "kafkalab", command, str(bad)], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-1500:]
    (record,) = iter_link_records(pcapng_bytes([(1, tsresol)], [(0, (1 << 63) + 5, b"\x00" * 60, "epb")]))
    assert record.ts_ns == 0 and any("out of range" in d for d in record.diagnostics)
