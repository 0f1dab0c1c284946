"""kafkalab's protocol core: a schema-driven, sans-IO codec for every Kafka API and version.

    >>> from kafkalab.protocol import encode_request, decode_request
    >>> frame = encode_request("ApiVersions", 3, {"client_software_name": "lab",
    ...                        "client_software_version": "1.0"}, correlation_id=7, client_id="me")
    >>> request = decode_request(frame)
    >>> request.api_name, request.api_version, request.correlation_id, request.body["client_software_name"]
    ('ApiVersions', 3, 7, 'lab')

This package imports nothing else from kafkalab and does no I/O: no sockets, files, clocks or asyncio.
"""
from .errors import DecodeError, EncodeError, ProtocolError, UnknownApiError, UnsupportedVersionError
from .messages import Message, Request, Response, decode_request, decode_response, encode_request, encode_response
from .schema.api_keys import ApiKey
from .schema.error_codes import ErrorCode, error_name
from .schema.headers import request_header_version, response_header_version
from .schema.registry import all_apis, api_keys, api_name, api_spec, resolve_api_key
from .tree import FieldNode

__all__ = [
    "DecodeError", "EncodeError", "ProtocolError", "UnknownApiError", "UnsupportedVersionError",
    "Message", "Request", "Response", "decode_request", "decode_response", "encode_request",
    "encode_response", "request_header_version", "response_header_version", "all_apis", "api_keys",
    "api_name", "api_spec", "resolve_api_key", "FieldNode", "ApiKey", "ErrorCode", "error_name",
]
