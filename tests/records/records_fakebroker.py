"""Just enough of a Kafka broker to make librdkafka (confluent-kafka) send one Produce request.

The test needs record batches written by an independent producer, with each message format and codec.
librdkafka picks the format from the broker's advertised API versions (KIP-35), so this fake advertises:
Produce <= 1 / Fetch <= 1 for magic 0, Produce 2 / Fetch 2 for magic 1, Produce 3 / Fetch 4 for magic 2
and Produce 7 / Fetch 10 when zstd is wanted. It answers ApiVersions and Metadata (hand-encoded, on purpose
independent of kafkalab's codec), captures the first Produce request's record set and acknowledges it.
"""
from __future__ import annotations

import socket
import struct
import threading

VERSIONS = {  # magic -> (produce max, fetch max)
    0: (1, 1),
    1: (2, 2),
    2: (3, 4),
    "zstd": (7, 10),
}


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class FakeBroker:
    def __init__(self, magic, topic: str) -> None:
        self.produce_max, self.fetch_max = VERSIONS[magic]
        self.topic = topic
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.captured: list[tuple[int, bytes]] = []  # (produce version, record set)
        self.got = threading.Event()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.closed = True
        self.sock.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                while True:
                    size = struct.unpack(">i", _recv(conn, 4))[0]
                    frame = _recv(conn, size)
                    reply = self._handle(frame)
                    if reply is not None:
                        conn.sendall(struct.pack(">i", len(reply)) + reply)
            except (OSError, EOFError):
                return

    def _handle(self, frame: bytes) -> bytes | None:
        key, version, corr = struct.unpack_from(">hhi", frame)
        (cid_len,) = struct.unpack_from(">h", frame, 8)
        body = 10 + max(cid_len, 0)
        if key == 18:
            return struct.pack(">i", corr) + self._api_versions(version)
        if key == 3:
            return struct.pack(">i", corr) + self._metadata(version)
        if key == 0:
            return struct.pack(">i", corr) + self._produce(version, frame, body)
        return None  # anything else: stay silent

    def _api_versions(self, version: int) -> bytes:
        apis = [(0, 0, self.produce_max), (1, 0, self.fetch_max), (3, 0, 1), (10, 0, 1), (18, 0, 3)]
        if version >= 3:
            out = struct.pack(">h", 0) + _uvarint(len(apis) + 1)
            for a in apis:
                out += struct.pack(">hhh", *a) + b"\x00"
            return out + struct.pack(">i", 0) + b"\x00"
        out = struct.pack(">hi", 0, len(apis)) + b"".join(struct.pack(">hhh", *a) for a in apis)
        return out + (struct.pack(">i", 0) if version >= 1 else b"")

    def _metadata(self, version: int) -> bytes:
        broker = struct.pack(">i", 1) + _string("127.0.0.1") + struct.pack(">i", self.port)
        if version >= 1:
            broker += struct.pack(">h", -1)  # rack: null
        out = struct.pack(">i", 1) + broker
        if version >= 1:
            out += struct.pack(">i", 1)  # controller id
        topic = struct.pack(">h", 0) + _string(self.topic)
        if version >= 1:
            topic += b"\x00"  # is_internal
        topic += struct.pack(">i", 1) + struct.pack(">hii", 0, 0, 1) + struct.pack(">ii", 1, 1) + struct.pack(">ii", 1, 1)
        return out + struct.pack(">i", 1) + topic

    def _produce(self, version: int, frame: bytes, pos: int) -> bytes:
        if version >= 3:
            (n,) = struct.unpack_from(">h", frame, pos)
            pos += 2 + max(n, 0)
        pos += 6  # acks, timeout
        (topics,) = struct.unpack_from(">i", frame, pos)
        pos += 4
        for _ in range(topics):
            (n,) = struct.unpack_from(">h", frame, pos)
            pos += 2 + n
            (parts,) = struct.unpack_from(">i", frame, pos)
            pos += 4
            for _ in range(parts):
                _index, size = struct.unpack_from(">ii", frame, pos)
                pos += 8
                self.captured.append((version, frame[pos:pos + size]))
                pos += size
        self.got.set()
        part = struct.pack(">ihq", 0, 0, 0)
        if version >= 2:
            part += struct.pack(">q", -1)
        if version >= 5:
            part += struct.pack(">q", 0)
        out = struct.pack(">i", 1) + _string(self.topic) + struct.pack(">i", 1) + part
        return out + (struct.pack(">i", 0) if version >= 1 else b"")


def _recv(conn: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def capture(magic: int, codec: str, messages, *, timeout: float = 10.0) -> bytes:
    """Produce ``messages`` [(key, value, headers, timestamp)] with librdkafka; return the record set bytes."""
    from confluent_kafka import Producer

    broker = FakeBroker("zstd" if codec == "zstd" else magic, "golden")
    try:
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{broker.port}", "compression.type": codec,
                             "linger.ms": 100, "acks": 1, "enable.idempotence": False,
                             "message.timeout.ms": int(timeout * 1000), "broker.address.family": "v4",
                             "socket.timeout.ms": 5000, "topic.metadata.refresh.interval.ms": 60000})
        for key, value, headers, ts in messages:
            kwargs = {"timestamp": ts} if ts is not None else {}
            if headers:
                kwargs["headers"] = list(headers)
            producer.produce("golden", value=value, key=key, partition=0, **kwargs)
        producer.flush(timeout)
        if not broker.got.wait(timeout):
            raise TimeoutError("librdkafka sent no Produce request")
        return broker.captured[0][1]
    finally:
        broker.close()
