"""librdkafka's mock cluster in a helper process, for tests and capture recordings that need a real broker
implementation that is not kafkalab's.

The helper loads the librdkafka shared library that ships with confluent-kafka through ctypes, creates a
one-broker mock cluster with the requested topics and prints its bootstrap address; it lives until its
standard input is closed. Run this file directly to start one by hand:

    python3 tests/capture/mock_cluster.py orders:1 events:3
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import subprocess
import sys
from typing import Iterator


def _library():
    import confluent_kafka

    libdir = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
    found = sorted(glob.glob(os.path.join(libdir, "librdkafka*.so*")))
    if not found:
        raise SystemExit(f"no librdkafka shared library under {libdir}")
    return ctypes.CDLL(found[0])


def serve(topics: list[tuple[str, int]]) -> None:
    lib = _library()
    ptr, text = ctypes.c_void_p, ctypes.c_char_p
    lib.rd_kafka_conf_new.restype = ptr
    lib.rd_kafka_conf_set.argtypes = [ptr, text, text, text, ctypes.c_size_t]
    lib.rd_kafka_new.restype = ptr
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ptr, text, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = ptr
    lib.rd_kafka_mock_cluster_new.argtypes = [ptr, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype = text
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ptr]
    lib.rd_kafka_mock_topic_create.argtypes = [ptr, text, ctypes.c_int, ctypes.c_int]
    errors = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", errors, 512)
    handle = lib.rd_kafka_new(0, conf, errors, 512)          # 0: a producer handle owns the mock cluster
    if not handle:
        raise SystemExit(f"rd_kafka_new failed: {errors.value!r}")
    cluster = lib.rd_kafka_mock_cluster_new(handle, 1)
    if not cluster:
        raise SystemExit("rd_kafka_mock_cluster_new failed")
    for name, partitions in topics:
        if lib.rd_kafka_mock_topic_create(cluster, name.encode(), partitions, 1):
            raise SystemExit(f"cannot create mock topic {name}")
    print(f"MOCK {lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()}", flush=True)
    sys.stdin.read()
    os._exit(0)                      # librdkafka's teardown of a mock cluster is fussy about ordering


@contextlib.contextmanager
def mock_cluster(topics: dict[str, int]) -> Iterator[tuple[str, int]]:
    """(host, port) of a running mock cluster with ``topics`` (name -> partitions)."""
    spec = [f"{name}:{count}" for name, count in topics.items()]
    helper = subprocess.Popen([sys.executable, os.path.abspath(__file__), *spec], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        line = helper.stdout.readline().strip()
        if not line.startswith("MOCK "):
            raise RuntimeError(f"mock cluster helper said {line!r}")
        host, _, port = line.split()[1].split(",")[0].rpartition(":")
        yield host, int(port)
    finally:
        helper.stdin.close()
        try:
            helper.wait(5)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()


if __name__ == "__main__":
    serve([(arg.split(":")[0], int(arg.split(":")[1]) if ":" in arg else 1) for arg in sys.argv[1:]])
