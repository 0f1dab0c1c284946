"""Fuzz target, capture readers: mutated pcap and pcapng files. The record reader and read_capture give
packets, frames and diagnostics, or a CaptureError; the frames table always builds."""
from __future__ import annotations

import io

from fuzz_support import FUZZ, mutants, tallied
from hypothesis import given

from kafkalab import read_capture
from kafkalab.pcap import CaptureError, iter_link_records


@FUZZ
@given(mutants("pcap"))
def test_fuzz_pcap(case):
    _, data = case
    with tallied("pcap", data):
        try:
            list(iter_link_records(data, []))
        except CaptureError:
            pass
        try:
            capture = read_capture(io.BytesIO(data))
        except CaptureError:
            return
        capture.frames
