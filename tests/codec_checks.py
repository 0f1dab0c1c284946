"""Shared assertions for codec tests: the byte-coverage invariant and both-ways encode/decode."""
from __future__ import annotations

from kafkalab.protocol import decode_request, decode_response, encode_request, encode_response
from kafkalab.protocol.tree import FieldNode


def assert_tiles(root: FieldNode, length: int) -> None:
    """The leaves of ``root`` cover [0, length) exactly once, in order; inflated buffers likewise."""
    position = 0
    for leaf in root.leaves():
        assert leaf.start == position, f"gap or overlap at {position}: {leaf!r}"
        assert leaf.end >= leaf.start, leaf
        position = leaf.end
    assert position == length, f"leaves end at {position}, buffer has {length} bytes"
    for node in root.walk():
        if node.buffer is not None:
            inner = FieldNode("", "", "", 0, len(node.buffer), children=node.children)
            assert_tiles(inner, len(node.buffer))


def encode_frame(api_key: int, kind: str, version: int, body: dict, correlation_id: int = 5) -> bytes:
    if kind == "request":
        return encode_request(api_key, version, body, correlation_id=correlation_id, client_id="kafkalab-test")
    return encode_response(api_key, version, body, correlation_id=correlation_id)


def decode_frame(frame: bytes, api_key: int, kind: str, version: int, **kwargs):
    if kind == "request":
        return decode_request(frame, **kwargs)
    return decode_response(frame, api_key, version, **kwargs)
