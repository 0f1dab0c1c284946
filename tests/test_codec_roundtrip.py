"""Every API key, every version, request and response: property-based round trips and path parity.

For generated bodies (nulls, empty and non-empty arrays, tagged fields present and absent, non-ASCII text,
record sets in several codecs): encode -> decode -> encode is byte-identical; the compiled fast path and the
reference interpreter agree on both decode and encode; and the annotated tree's leaves tile the frame.
Set KAFKALAB_EXAMPLES to run more examples per (api, version, kind).
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from codec_checks import assert_tiles, decode_frame, encode_frame
from kafkalab.protocol import all_apis
from kafkalab.protocol.codec import compiler, decode_reference, encode_reference
from schema_strategies import body_strategy

EXAMPLES = int(os.environ.get("KAFKALAB_EXAMPLES", "6"))
CASES = [(api.api_key, kind) for api in all_apis() for kind in ("request", "response")]


def check_version(api_key: int, kind: str, version: int, body: dict) -> None:
    spec = next(a for a in all_apis() if a.api_key == api_key).message(kind)
    frame = encode_frame(api_key, kind, version, body)
    message = decode_frame(frame, api_key, kind, version)
    assert not message.diagnostics
    assert encode_frame(api_key, kind, version, message.body) == frame

    fast_bytes = compiler.encoder(spec, version)(body)
    assert fast_bytes == encode_reference(spec, version, body)
    start = len(frame) - len(fast_bytes)
    fast_body, fast_end = compiler.decoder(spec, version)(frame, start, "batches")
    assert (fast_body, fast_end) == decode_reference(spec, version, frame, start)

    annotated = decode_frame(frame, api_key, kind, version, annotate=True)
    assert not annotated.diagnostics
    assert annotated.body == message.body
    assert_tiles(annotated.tree, len(frame))


@pytest.mark.parametrize("api_key,kind", CASES, ids=[f"{k}-{kind}" for k, kind in CASES])
def test_round_trip_every_version(api_key: int, kind: str) -> None:
    spec = next(a for a in all_apis() if a.api_key == api_key).message(kind)
    for version in range(spec.versions[0], spec.versions[1] + 1):
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(body=body_strategy(spec, version))
        def run(body):
            check_version(api_key, kind, version, body)
        run()


def test_schema_covers_every_key_and_version() -> None:
    """93 API keys (0-92) and Kafka 4.3's version ranges: 361 request versions, as many responses."""
    apis = all_apis()
    assert [a.api_key for a in apis] == list(range(93))
    versions = sum(a.request.versions[1] - a.request.versions[0] + 1 for a in apis)
    assert versions == 361
    assert all(a.request.versions == a.response.versions for a in apis)
    newest = {a.name: a.request.versions[1] for a in apis}
    assert (newest["Produce"], newest["Fetch"], newest["ListOffsets"], newest["Metadata"]) == (13, 18, 11, 13)
    assert newest["OffsetCommit"] == 10 and newest["DescribeShareGroupOffsets"] == 1
