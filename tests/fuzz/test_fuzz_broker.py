"""Fuzz target, the broker's request path (sans-IO, as the server drives it): mutated request frames fed in
random pieces through the receive buffer and handled. The only failure a connection may see is
CloseConnection; every answer is a well-formed frame with the request's correlation id; no partition's
offsets ever rewind or leap."""
from __future__ import annotations

import struct

from fuzz_support import FUZZ, mutants, tallied
from hypothesis import given
from hypothesis import strategies as st

from kafkalab.broker.config import BrokerConfig
from kafkalab.broker.dispatch import CloseConnection, Connection, Pending
from kafkalab.broker.handlers import build_registry
from kafkalab.broker.journal import Journal
from kafkalab.broker.state import BrokerState

REGISTRY = build_registry()


@FUZZ
@given(mutants("broker"), st.lists(st.integers(1, 4096), max_size=8))
def test_fuzz_broker(case, cuts):
    _, frame = case
    state = BrokerState(BrokerConfig(max_request_size=1 << 20))
    state.create_topic("t", 2)
    conn = Connection(state, REGISTRY, Journal(100), stream=0, src="c:1", dst="b:2", max_request_size=1 << 20)
    with tallied("broker", frame):
        try:
            for piece in _pieces(frame, cuts):
                for complete in conn.feed(piece):
                    _answer(conn, complete)
        except CloseConnection:
            pass
        _check_offsets(state)


def _pieces(data: bytes, cuts: list[int]):
    pos = 0
    for cut in cuts:
        yield data[pos:pos + cut]
        pos += cut
    yield data[pos:]


def _answer(conn: Connection, frame: bytes) -> None:
    answer = conn.handle(frame, 0.0, 0)
    while isinstance(answer, Pending):
        if answer.offload is not None:
            answer = conn.resume(answer, answer.offload.work())
        else:
            body = answer.wait.attempt(0, True)
            answer = conn.respond(answer, body, 0.0)
    if answer is not None:
        size, correlation_id = struct.unpack_from(">ii", answer)
        assert size == len(answer) - 4
        assert correlation_id == struct.unpack_from(">i", frame, 8)[0]


def _check_offsets(state: BrokerState) -> None:
    for topic in state.store.topics.values():
        for partition in topic.partitions:
            log = partition.log
            expected = log.log_start_offset
            for entry in log.entries:      # a legacy wrapper is indexed by its last inner offset
                assert entry.base_offset == expected if entry.magic == 2 else entry.last_offset >= expected
                assert entry.last_offset >= entry.base_offset
                expected = entry.last_offset + 1
            assert log.next_offset == expected
