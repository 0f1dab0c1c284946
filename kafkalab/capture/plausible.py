"""Is there a Kafka frame starting here? Cheap header checks used for detection and resynchronisation.

A request is plausible when its size, API key, version (within the schema's range), correlation id and
client id length are all consistent, and, once the whole frame is buffered, it decodes. A response is
plausible when its size is sane and its correlation id is one the connection is waiting for.
"""
from __future__ import annotations

import re
import struct
from functools import lru_cache

from kafkalab.protocol import DecodeError, ProtocolError, api_keys, api_spec, decode_request

MAX_RESYNC_FRAME = (1 << 24) - 1    # 16 MB: the largest frame believed after a loss (its size's first byte is 0)
_HEAD = struct.Struct(">ihhi")

# Where a frame can start at all, found in C so that bytes are looked at closely (in Python) only there:
# a request has a size below 16 MB, an API key and a version below 256; a response a size below 16 MB and a
# correlation id that is not negative. Each accepts every position the checks below accept. (They begin with
# a literal zero byte, which the regular expression engine finds at memchr speed: gigabytes a second over
# other protocols' bytes. Matches are taken one ``search`` at a time, as they may overlap.)
REQUEST_START = re.compile(rb"\x00...\x00.\x00", re.S)
RESPONSE_START = re.compile(rb"\x00...[\x00-\x7f]", re.S)


@lru_cache(maxsize=None)
def request_versions() -> dict[int, tuple[int, int]]:
    return {key: api_spec(key).message("request").versions for key in api_keys()}


def request_header_ok(buf, pos: int) -> bool | None:
    """Header fields only (needs 14 bytes): None when more bytes are needed."""
    if len(buf) - pos < 14:
        return None
    size, api_key, api_version, correlation_id = _HEAD.unpack_from(buf, pos)
    if size < 10 or size > MAX_RESYNC_FRAME or correlation_id < 0:
        return False
    versions = request_versions().get(api_key)
    if versions is None or not versions[0] <= api_version <= versions[1]:
        return False
    client_id_length = struct.unpack_from(">h", buf, pos + 12)[0]
    return -1 <= client_id_length <= size - 10


def plausible_request(buf, pos: int) -> bool | None:
    """Header consistent and, once complete, the frame decodes."""
    verdict = request_header_ok(buf, pos)
    if not verdict:
        return verdict
    size = struct.unpack_from(">i", buf, pos)[0]
    if len(buf) - pos < 4 + size:
        return None
    try:
        decode_request(bytes(buf[pos:pos + 4 + size]))
    except (ProtocolError, DecodeError, ValueError):
        return False
    return True


def response_head(buf, pos: int) -> tuple[int, int] | None:
    """(size, correlation id) of a response frame starting at ``pos``, if the bytes are there."""
    if len(buf) - pos < 8:
        return None
    return struct.unpack_from(">ii", buf, pos)
