"""Checks on the Kafka error-code table."""
from __future__ import annotations

import dataclasses

import pytest

from kafkalab.protocol.schema.error_codes import (
    BY_CODE,
    BY_NAME,
    ERRORS,
    MAX_CODE,
    ErrorCode,
    ErrorInfo,
    error_info,
    error_name,
    is_retriable,
)


def test_codes_are_unique():
    codes = [e.code for e in ERRORS]
    assert len(codes) == len(set(codes))


def test_names_are_unique_and_upper_snake():
    names = [e.name for e in ERRORS]
    assert len(names) == len(set(names))
    for name in names:
        assert name == name.upper() and " " not in name, name


def test_table_is_sorted_and_contiguous_from_minus_one():
    codes = [e.code for e in ERRORS]
    assert codes == sorted(codes)
    assert codes == list(range(-1, MAX_CODE + 1))
    assert MAX_CODE >= 133


def test_lookup_dicts_match_the_table():
    assert len(BY_CODE) == len(BY_NAME) == len(ERRORS)
    for e in ERRORS:
        assert BY_CODE[e.code] is e
        assert BY_NAME[e.name] is e


def test_every_entry_has_a_meaning():
    for e in ERRORS:
        assert isinstance(e.meaning, str) and e.meaning.strip(), e.name
        assert "\n" not in e.meaning


def test_entries_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        ERRORS[0].code = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (-1, "UNKNOWN_SERVER_ERROR"),
        (0, "NONE"),
        (1, "OFFSET_OUT_OF_RANGE"),
        (2, "CORRUPT_MESSAGE"),
        (3, "UNKNOWN_TOPIC_OR_PARTITION"),
        (6, "NOT_LEADER_OR_FOLLOWER"),
        (15, "COORDINATOR_NOT_AVAILABLE"),
        (16, "NOT_COORDINATOR"),
        (25, "UNKNOWN_MEMBER_ID"),
        (27, "REBALANCE_IN_PROGRESS"),
        (35, "UNSUPPORTED_VERSION"),
        (36, "TOPIC_ALREADY_EXISTS"),
        (45, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
        (47, "INVALID_PRODUCER_EPOCH"),
        (58, "SASL_AUTHENTICATION_FAILED"),
        (79, "MEMBER_ID_REQUIRED"),
        (87, "INVALID_RECORD"),
        (99, "POSITION_OUT_OF_RANGE"),
        (100, "UNKNOWN_TOPIC_ID"),
        (110, "FENCED_MEMBER_EPOCH"),
        (120, "TRANSACTION_ABORTABLE"),
        (128, "INVALID_REGULAR_EXPRESSION"),
        (129, "REBOOTSTRAP_REQUIRED"),
        (133, "SHARE_SESSION_LIMIT_REACHED"),
    ],
)
def test_well_known_codes(code, name):
    assert error_name(code) == name
    assert BY_NAME[name].code == code


@pytest.mark.parametrize(
    ("name", "retriable"),
    [
        ("NONE", False),
        ("UNKNOWN_SERVER_ERROR", False),
        ("OFFSET_OUT_OF_RANGE", False),
        ("CORRUPT_MESSAGE", True),
        ("UNKNOWN_TOPIC_OR_PARTITION", True),
        ("LEADER_NOT_AVAILABLE", True),
        ("NOT_LEADER_OR_FOLLOWER", True),
        ("REQUEST_TIMED_OUT", True),
        ("BROKER_NOT_AVAILABLE", False),
        ("MESSAGE_TOO_LARGE", False),
        ("NOT_COORDINATOR", True),
        ("REBALANCE_IN_PROGRESS", False),
        ("TOPIC_AUTHORIZATION_FAILED", False),
        ("NOT_CONTROLLER", True),
        ("CONCURRENT_TRANSACTIONS", True),
        ("KAFKA_STORAGE_ERROR", True),
        ("FENCED_LEADER_EPOCH", True),
        ("ELECTION_NOT_NEEDED", True),
        ("UNSTABLE_OFFSET_COMMIT", True),
        ("THROTTLING_QUOTA_EXCEEDED", True),
        ("PRODUCER_FENCED", False),
        ("UNKNOWN_TOPIC_ID", True),
        ("SHARE_SESSION_NOT_FOUND", True),
        ("REBOOTSTRAP_REQUIRED", False),
        ("SHARE_SESSION_LIMIT_REACHED", True),
    ],
)
def test_retriable_flags(name, retriable):
    assert BY_NAME[name].retriable is retriable
    assert is_retriable(BY_NAME[name].code) is retriable


def test_unknown_codes():
    assert error_name(MAX_CODE + 1000) == f"UNKNOWN_ERROR_{MAX_CODE + 1000}"
    assert error_name(-2) == "UNKNOWN_ERROR_-2"
    assert error_info(-2) is None
    assert error_info(32767) is None
    assert is_retriable(32767) is False


def test_error_info_returns_the_entry():
    info = error_info(6)
    assert isinstance(info, ErrorInfo)
    assert info == ErrorInfo(6, "NOT_LEADER_OR_FOLLOWER", True, info.meaning)
