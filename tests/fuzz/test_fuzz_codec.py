"""Fuzz target, codec layer: mutated real client frames. Plain decoding gives a value or a ProtocolError;
annotated decoding never raises and its leaves tile the frame exactly."""
from __future__ import annotations

from codec_checks import assert_tiles
from fuzz_support import FUZZ, mutants, tallied
from hypothesis import given

from kafkalab.protocol import ProtocolError, decode_request, decode_response


def _decode(name: str, frame: bytes, **kwargs):
    api_key, version, direction = name.split("-")[:3]
    if direction == "request":
        return decode_request(frame, **kwargs)
    return decode_response(frame, int(api_key), int(version), **kwargs)


@FUZZ
@given(mutants("codec"))
def test_fuzz_codec(case):
    name, frame = case
    with tallied("codec", frame):
        try:
            _decode(name, frame)
        except ProtocolError:
            pass
        annotated = _decode(name, frame, annotate=True)
        assert_tiles(annotated.tree, len(frame))
