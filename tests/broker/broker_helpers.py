"""Helpers for broker tests, importable by test modules (a conftest is not: several share that module name)."""
from __future__ import annotations

import os
import socket
import struct

from kafkalab.protocol import decode_response, encode_request

HERE = os.path.dirname(os.path.abspath(__file__))


class RawClient:
    """A blocking socket that sends codec-built requests and reads whole response frames."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, api, api_version: int, body: dict | None = None, raw: bytes | None = None) -> int:
        self.correlation_id += 1
        frame = raw if raw is not None else encode_request(api, api_version, body or {},
                                                            correlation_id=self.correlation_id, client_id="raw-test")
        self.sock.sendall(frame)
        return self.correlation_id

    def read_frame(self) -> bytes:
        head = self._exactly(4)
        return head + self._exactly(struct.unpack(">i", head)[0])

    def _exactly(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the broker")
            out += chunk
        return bytes(out)

    def call(self, api, api_version: int, body: dict | None = None, **kw):
        correlation_id = self.send(api, api_version, body)
        response = decode_response(self.read_frame(), api, api_version, **kw)
        assert response.correlation_id == correlation_id
        return response.body

    def is_closed(self, wait: float = 5.0) -> bool:
        self.sock.settimeout(wait)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False
