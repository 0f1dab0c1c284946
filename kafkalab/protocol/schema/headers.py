"""Which header version frames of an API version use: the facts the message definitions leave implicit.

Request header v0 has api key, version and correlation id; v1 adds the client id (a classic nullable string,
never compact, even in header v2); v2 adds a tagged-field section. Response header v0 is the correlation id,
v1 adds tagged fields.
"""
from __future__ import annotations

from .api_keys import ApiKey
from .registry import api_spec

API_VERSIONS, CONTROLLED_SHUTDOWN = int(ApiKey.API_VERSIONS), int(ApiKey.CONTROLLED_SHUTDOWN)   # plain ints: hot paths


def request_header_version(api_key: int, api_version: int) -> int:
    """Flexible requests use header v2, the rest v1; ControlledShutdown v0 predates client ids (header v0)."""
    if api_key == CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if api_spec(api_key).request.is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """Flexible responses use header v1, except ApiVersions: a client must be able to read the answer
    before it knows which versions the broker speaks, so ApiVersions responses always use header v0 (KIP-511)."""
    if api_key == API_VERSIONS:
        return 0
    return 1 if api_spec(api_key).response.is_flexible(api_version) else 0
