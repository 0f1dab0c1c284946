"""The named constants are the schema's and the error table's own: every API and every code, no more."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode, api_keys, api_name, encode_request, decode_request
from kafkalab.protocol.schema.error_codes import ERRORS
from kafkalab.protocol.schema.naming import snake_case


def test_every_schema_api_has_its_constant_and_no_other():
    assert [int(key) for key in ApiKey] == api_keys()
    for key in ApiKey:
        assert key.name == snake_case(api_name(key)).upper()


def test_every_error_code_has_its_constant_and_no_other():
    assert {(e.name, e.code) for e in ERRORS} == {(member.name, int(member)) for member in ErrorCode}
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6 and ErrorCode(-1).name == "UNKNOWN_SERVER_ERROR"


def test_constants_encode_as_the_numbers_they_name():
    frame = encode_request(ApiKey.METADATA, 12, {"topics": None}, correlation_id=1)
    request = decode_request(frame)
    assert request.api_key == ApiKey.METADATA == 3 and type(request.api_key) is int
