"""librdkafka's preview share consumer (KIP-932), driven through ctypes on the library confluent-kafka bundles:
the one real client that speaks share groups."""
from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import time

import confluent_kafka
from kafka import KafkaProducer

from kafkalab.broker import Broker
from kafkalab.broker.share import ACCEPT, REJECT, RELEASE  # noqa: F401 - the types acknowledge() takes

vp, cp = ctypes.c_void_p, ctypes.c_char_p


@contextlib.contextmanager
def broker_with_jobs(count: int):
    """A broker whose one-partition topic "jobs" holds job-0 .. job-(count-1)."""
    with Broker(topics={"jobs": 1}) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000)
        for i in range(count):
            producer.send("jobs", b"job-%d" % i, partition=0)
        producer.flush(20)
        producer.close()
        yield broker


class Message(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("rkt", vp), ("partition", ctypes.c_int32), ("payload", vp),
                ("len", ctypes.c_size_t), ("key", vp), ("key_len", ctypes.c_size_t), ("offset", ctypes.c_int64),
                ("_private", vp)]


def _library():
    libdir = os.path.join(os.path.dirname(confluent_kafka.__file__), "..", "confluent_kafka.libs")
    lib = ctypes.CDLL(sorted(glob.glob(os.path.join(libdir, "librdkafka*.so*")))[0])
    signatures = {
        "rd_kafka_conf_new": (vp, []), "rd_kafka_conf_set": (ctypes.c_int, [vp, cp, cp, cp, ctypes.c_size_t]),
        "rd_kafka_share_consumer_new": (vp, [vp, cp, ctypes.c_size_t]),
        "rd_kafka_topic_partition_list_new": (vp, [ctypes.c_int]),
        "rd_kafka_topic_partition_list_add": (vp, [vp, cp, ctypes.c_int32]),
        "rd_kafka_topic_partition_list_destroy": (None, [vp]),
        "rd_kafka_share_subscribe": (vp, [vp, vp]),
        "rd_kafka_share_poll": (vp, [vp, ctypes.c_int, ctypes.POINTER(vp)]),
        "rd_kafka_messages_count": (ctypes.c_size_t, [vp]),
        "rd_kafka_messages_get": (ctypes.POINTER(Message), [vp, ctypes.c_size_t]),
        "rd_kafka_messages_destroy": (None, [vp]),
        "rd_kafka_message_delivery_count": (ctypes.c_int16, [ctypes.POINTER(Message)]),
        "rd_kafka_share_acknowledge_type": (ctypes.c_int, [vp, ctypes.POINTER(Message), ctypes.c_int]),
        "rd_kafka_error_string": (cp, [vp]), "rd_kafka_error_destroy": (None, [vp]),
        "rd_kafka_share_consumer_close": (vp, [vp]), "rd_kafka_share_destroy": (None, [vp]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


class ShareConsumer:
    """Subscribe, poll batches (value, offset, delivery count), acknowledge each record by type."""

    def __init__(self, bootstrap: str, group: str, topic: str, explicit: bool = False) -> None:
        self.lib = lib = _library()
        conf, error = lib.rd_kafka_conf_new(), ctypes.create_string_buffer(512)
        settings = {"bootstrap.servers": bootstrap, "group.id": group, "log_level": "3",
                    "share.acknowledgement.mode": "explicit" if explicit else "implicit"}
        for key, value in settings.items():
            if lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), error, 512) != 0:
                raise RuntimeError(error.value.decode())
        self.handle = lib.rd_kafka_share_consumer_new(conf, error, 512)
        if not self.handle:
            raise RuntimeError(error.value.decode())
        topics = lib.rd_kafka_topic_partition_list_new(1)
        lib.rd_kafka_topic_partition_list_add(topics, topic.encode(), -1)
        self._check(lib.rd_kafka_share_subscribe(self.handle, topics))
        lib.rd_kafka_topic_partition_list_destroy(topics)
        self.batch = vp()

    def _check(self, error) -> None:
        if error:
            text = self.lib.rd_kafka_error_string(error).decode()
            self.lib.rd_kafka_error_destroy(error)
            raise RuntimeError(text)

    def poll(self, timeout_ms: int = 1000) -> list[tuple[bytes, int, int]]:
        """The next batch as (value, offset, delivery count); the previous batch is freed."""
        if self.batch:
            self.lib.rd_kafka_messages_destroy(self.batch)
            self.batch = vp()
        self._check(self.lib.rd_kafka_share_poll(self.handle, timeout_ms, ctypes.byref(self.batch)))
        if not self.batch:
            return []
        out, self.messages = [], []
        for i in range(self.lib.rd_kafka_messages_count(self.batch)):
            msg = self.lib.rd_kafka_messages_get(self.batch, i)
            if msg.contents.err == 0:
                self.messages.append(msg)
                out.append((ctypes.string_at(msg.contents.payload, msg.contents.len), msg.contents.offset,
                            self.lib.rd_kafka_message_delivery_count(msg)))
        return out

    def poll_until(self, count: int, timeout: float = 20.0) -> list[tuple[bytes, int, int]]:
        got, deadline = [], time.time() + timeout
        while len(got) < count and time.time() < deadline:
            got += self.poll(500)
        return got

    def acknowledge(self, offset: int, kind: int) -> None:
        msg = next(m for m in self.messages if m.contents.offset == offset)
        assert self.lib.rd_kafka_share_acknowledge_type(self.handle, msg, kind) == 0

    def close(self) -> None:
        if self.batch:
            self.lib.rd_kafka_messages_destroy(self.batch)
            self.batch = vp()
        self._check(self.lib.rd_kafka_share_consumer_close(self.handle))
        self.lib.rd_kafka_share_destroy(self.handle)
