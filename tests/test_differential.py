"""Differential tests: kafkalab's codec against two independent implementations of the Kafka protocol.

For every (api, version, kind) that kio 0.6.5 or kafka-python 3.0.12 implements and kafkalab supports, and
for a few Hypothesis-generated bodies each (see ``tests/differential_support.py`` for the adapters):

* ``kafkalab->other``: kafkalab encodes the body, the other library decodes those bytes (and must consume all
  of them), and every field of its object, normalised to kafkalab's value types, must equal the body (absent
  tagged fields taking kafkalab's defaults).
* ``other->kafkalab``: the other library encodes an object built from the same values, kafkalab decodes those
  bytes to an equal dict, and the bytes must equal kafkalab's own encoding of the body.

Fields are paired by wire position (and tag), then checked by name, kind and type, so a structural difference
between the schemas fails the test naming the field. Known differences are listed below with reasons and are
``xfail(strict=True)``: if either side changes, the marker has to go.

Set ``KAFKALAB_DIFF_EXAMPLES`` to draw more bodies per case, ``KAFKALAB_DIFF_RANDOM=1`` to explore with fresh
random seeds instead of the derandomized (reproducible) default, and ``KAFKALAB_DIFF_SHRINK=1`` to shrink
failing examples.
"""
from __future__ import annotations

import os
import struct
import warnings
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings

from differential_support import Mismatch, adapter, body_strategy, null_body, structure, with_defaults
from kafkalab.protocol import api_name, api_spec
from kafkalab.protocol.codec import decode, encode

LIBRARIES = ("kio", "kafka-python")
DIRECTIONS = ("kafkalab->other", "other->kafkalab")
EXAMPLES = int(os.environ.get("KAFKALAB_DIFF_EXAMPLES", "10"))
# No shrinking unless asked (KAFKALAB_DIFF_SHRINK=1): it keeps known-failing (xfail) cases fast, and the
# comparer names the differing field anyway.
PHASES = tuple(Phase) if os.environ.get("KAFKALAB_DIFF_SHRINK") == "1" else (Phase.explicit, Phase.generate)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True, phases=PHASES,
                    derandomize=os.environ.get("KAFKALAB_DIFF_RANDOM") != "1",
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])

# ------------------------------------------------------------ known differences (each with its reason)

# Same wire position and type, different name: the schemas agree on the bytes, only the dict key differs.
NAME_DIVERGENCES: dict = {}

# (library, api_key, version, kind, direction or None for both) -> reason (strict xfail). Empty: the
# differences these tests found (BrokerHeartbeat v2's null default, pre-release share/streams group
# versions, Vote's field names) were fixed in the schema generator.
KNOWN_FAILURES: dict = {}


# ------------------------------------------------------------ cases

def library_combos(library: str) -> list[tuple[int, int, str]]:
    return adapter(library).combos()


def build_cases():
    cases = []
    for library in LIBRARIES:
        for api_key, version, kind in library_combos(library):
            for direction in DIRECTIONS:
                marks = []
                reason = KNOWN_FAILURES.get((library, api_key, version, kind, direction)) \
                    or KNOWN_FAILURES.get((library, api_key, version, kind, None))
                if reason:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                cases.append(pytest.param(library, api_key, version, kind, direction, marks=marks,
                                          id=f"{library}-{api_name(api_key)}-v{version}-{kind}-{direction}"))
    return cases


CASES = build_cases()


@lru_cache(maxsize=None)
def matched(library: str, api_key: int, version: int, kind: str):
    divergences = {k[3]: v for k, v in NAME_DIVERGENCES.items() if k[:3] == (library, api_key, kind)}
    a = adapter(library)
    a.allowed_renames = divergences
    try:
        return structure(library, api_key, version, kind)
    finally:
        a.allowed_renames = {}


# ------------------------------------------------------------ the comparer

def assert_same(expected, actual, path: str = "") -> None:
    """Field-by-field equality that names the first differing field."""
    where = path or "<body>"
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected a struct, got {actual!r}"
        assert expected.keys() == actual.keys(), \
            f"{where}: fields differ: missing {expected.keys() - actual.keys()}, extra {actual.keys() - expected.keys()}"
        for name in expected:
            assert_same(expected[name], actual[name], f"{path}.{name}" if path else name)
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{where}: expected an array, got {actual!r}"
        assert len(expected) == len(actual), f"{where}: {len(expected)} items expected, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{where}[{i}]")
    elif isinstance(actual, memoryview):   # RECORDS decoded with records="raw": a zero-copy view of the frame
        assert isinstance(expected, bytes) and actual.readonly, f"{where}: expected {expected!r}, got a view"
        assert bytes(actual) == expected, f"{where}: {expected!r} != {bytes(actual)!r}"
    else:
        assert type(expected) is type(actual) or (isinstance(expected, int) and isinstance(actual, int)
                                                  and not isinstance(actual, bool)), \
            f"{where}: expected {type(expected).__name__} {expected!r}, got {type(actual).__name__} {actual!r}"
        if isinstance(expected, float):   # bit for bit: -0.0 is not 0.0 on the wire
            assert struct.pack(">d", expected) == struct.pack(">d", actual), f"{where}: {expected!r} != {actual!r}"
        assert expected == actual, f"{where}: expected {expected!r}, got {actual!r}"


# ------------------------------------------------------------ the tests

@pytest.mark.parametrize(("library", "api_key", "version", "kind", "direction"), CASES)
def test_differential(library, api_key, version, kind, direction):
    try:
        link = matched(library, api_key, version, kind)
    except Mismatch as exc:
        pytest.fail(f"{library} and kafkalab disagree on {api_name(api_key)} v{version} {kind}: {exc}")
    a = adapter(library)
    spec = api_spec(api_key).message(kind)

    def kafkalab_to_other(body):
        data = encode(spec, version, body)
        obj, end = a.decode(api_key, version, kind, data)
        assert end == len(data), f"{library} consumed {end} of kafkalab's {len(data)} bytes: {data.hex()}"
        assert_same(with_defaults(link, body), a.to_kafkalab(link, obj))

    def other_to_kafkalab(body):
        data = a.encode(api_key, version, kind, a.build(link, body))
        decoded, end = decode(spec, version, data, 0, records="raw")
        assert end == len(data), f"kafkalab consumed {end} of {library}'s {len(data)} bytes: {data.hex()}"
        assert_same(with_defaults(link, body), decoded)
        ours = encode(spec, version, body)
        assert data == ours, f"encodings differ:\n{library}:  {data.hex()}\nkafkalab: {ours.hex()}"

    check = kafkalab_to_other if direction == "kafkalab->other" else other_to_kafkalab
    SETTINGS(given(body_strategy(link, a))(example(null_body(link))(check)))()


def test_broker_heartbeat_v2_cordoned_log_dirs_is_null_by_default():
    """The byte-level form of the BrokerHeartbeat difference found above (Kafka's expectation, per kio)."""
    spec = api_spec("BrokerHeartbeat").request
    body = {"broker_id": 1, "broker_epoch": 2, "current_metadata_offset": 3, "want_fence": False,
            "want_shut_down": False}
    fixed = struct.pack(">iqq??", 1, 2, 3, False, False)
    assert encode(spec, 2, dict(body, cordoned_log_dirs=None)) == fixed + bytes.fromhex("00")
    assert encode(spec, 2, dict(body, cordoned_log_dirs=[])) == fixed + bytes.fromhex("01" "01" "01" "01")
    assert decode(spec, 2, fixed + b"\x00")[0]["cordoned_log_dirs"] is None


def test_coverage_summary():
    """How many (api, version, kind) combinations each library is compared on; fails if coverage shrinks."""
    counts = {library: len(library_combos(library)) for library in LIBRARIES}
    apis = {library: len({c[0] for c in library_combos(library)}) for library in LIBRARIES}
    known = {library: len({k[1:4] for k in KNOWN_FAILURES if k[0] == library}) for library in LIBRARIES}
    message = "differential coverage: " + "; ".join(
        f"{library} {counts[library]} (api, version, kind) combinations over {apis[library]} APIs "
        f"({known[library]} known-failing)" for library in LIBRARIES)
    print(message)
    warnings.warn(message, UserWarning, stacklevel=1)
    # every combination a library implements is compared: none is left out because kafkalab lacks it
    assert {library: adapter(library).dropped for library in LIBRARIES} == {library: [] for library in LIBRARIES}
    assert counts["kio"] >= 600, counts
    assert counts["kafka-python"] >= 470, counts
    assert len(CASES) == 2 * sum(counts.values())
