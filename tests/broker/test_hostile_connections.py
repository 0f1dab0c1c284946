"""Hostile connections: size prefixes that announce what never comes, slowloris, idle sockets. Memory grows
with bytes that arrive, a broker-wide budget pauses readers instead of exhausting memory, and connections
that never finish a request or sit idle are closed."""
from __future__ import annotations

import os
import socket
import struct
import time

import pytest
from broker_helpers import RawClient

from kafkalab.broker import Broker
from kafkalab.broker.dispatch import ReceiveBuffer
from kafkalab.protocol import encode_request

MIB = 1 << 20


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _announce(bootstrap: str, size: int, extra: bytes = b"\x00", then: bytes = b"") -> socket.socket:
    """A connection that announces a frame of ``size`` bytes, sends ``extra``, and later ``then``."""
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(struct.pack(">i", size) + extra)
    if then:
        time.sleep(0.05)                 # a separate read: the one that used to make room for the whole frame
        sock.sendall(then)
    return sock


def test_receive_buffer_grows_with_bytes_that_arrive_not_with_the_announced_size():
    buffer = ReceiveBuffer(100 * MIB)
    space = buffer.space()
    space[:9] = struct.pack(">i", 100 * MIB - 4) + b"\x00" * 5
    space.release()
    assert buffer.filled(9) == []
    assert len(buffer.space()) <= 256 << 10
    assert len(buffer.data) <= 256 << 10


def test_nine_bytes_per_connection_do_not_cost_the_announced_frame():
    with Broker(max_request_size=64 * MIB) as broker:
        before = _rss()
        socks = [_announce(broker.bootstrap_servers, 64 * MIB - 4, b"\x00" * 4, b"\x00") for _ in range(12)]
        client = RawClient(broker.bootstrap_servers)
        assert client.call("ApiVersions", 3, {})["error_code"] == 0      # all twelve were read by now
        grown = _rss() - before
        for s in socks:
            s.close()
        client.close()
    assert grown < 64 * MIB, f"{grown / MIB:.0f} MiB for 108 bytes"


def test_budget_pauses_a_frame_that_does_not_fit_until_memory_frees():
    frame_size = 3 * MIB
    with Broker(max_request_size=8 * MIB, queued_max_request_bytes=2 * MIB, request_receive_timeout_ms=1500) as b:
        hog = _announce(b.bootstrap_servers, frame_size, b"\x00" * 1000)       # reserves, never finishes
        time.sleep(0.3)
        waiter = RawClient(b.bootstrap_servers)
        big = encode_request("ApiVersions", 3, {"client_software_name": "w" * (frame_size - 100),
                                                "client_software_version": "1"}, correlation_id=7)
        started = time.monotonic()
        waiter.sock.sendall(big[:MIB])                                      # announced: over budget, paused
        small = RawClient(b.bootstrap_servers)
        assert small.call("ApiVersions", 3, {})["error_code"] == 0          # whole small frames still pass
        waiter.sock.sendall(big[MIB:])
        assert RawClient.is_closed(_Wrap(hog), wait=10)                     # the hog times out...
        frame = waiter.read_frame()                                         # ...then the waiter is served
        assert struct.unpack_from(">i", frame, 4)[0] == 7
        assert time.monotonic() - started > 1.0
        waiter.close(), small.close()
        deadline = time.monotonic() + 10
        while b._server.budget.used and time.monotonic() < deadline:
            time.sleep(0.05)
        assert b._server.budget.used == 0                                   # every byte given back


class _Wrap:
    def __init__(self, sock):
        self.sock = sock


@pytest.mark.parametrize("trickle", [False, True])
def test_idle_and_slowloris_connections_are_closed(trickle):
    with Broker(connections_max_idle_ms=1500, request_receive_timeout_ms=1000) as broker:
        if trickle:              # a request that arrives a byte at a time, never whole
            sock = _announce(broker.bootstrap_servers, 100)
        else:                    # a connection that never says anything
            host, port = broker.bootstrap_servers.rsplit(":", 1)
            sock = socket.create_connection((host, int(port)), timeout=10)
        started = time.monotonic()
        sock.settimeout(0.2)
        closed = False
        while time.monotonic() - started < 8 and not closed:
            try:
                if trickle:
                    sock.sendall(b"\x00")
                closed = sock.recv(1) == b""
            except socket.timeout:
                continue
            except (ConnectionResetError, BrokenPipeError):
                closed = True
        assert closed, "still open after 8 s"
        assert 0.9 < time.monotonic() - started < 6
        honest = RawClient(broker.bootstrap_servers)
        assert honest.call("ApiVersions", 3, {})["error_code"] == 0
        honest.close()
