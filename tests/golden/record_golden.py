#!/usr/bin/env python3
"""Record golden Kafka wire-protocol vectors from real clients talking to librdkafka's mock cluster.

How it works (see README.md in this directory for the long version):

* A helper process loads the librdkafka shared library bundled with confluent-kafka through ctypes,
  creates a one-broker mock cluster (``rd_kafka_mock_cluster_new``), pre-creates the topics this
  script produces to (one partition each), and tells the mock to *advertise* the recording proxy's
  address (``rd_kafka_mock_broker_set_host_port``). Every client therefore talks to the proxy for the
  bootstrap connection and for every connection it opens after reading Metadata / FindCoordinator.
* A threaded TCP relay on 127.0.0.1 forwards bytes unchanged in both directions and splits each
  direction into size-prefixed frames. Only the request header prefix is parsed (api_key,
  api_version, correlation_id, client_id); responses are paired with requests by correlation id.
* Clients run one after another (confluent-kafka, kafka-python, aiokafka, kcat, kafkajs); each
  connection is labelled with the client/phase that was running when it was accepted.
* Frames are deduplicated (at most 2 per client/api/version/direction; Produce and Fetch are kept
  per phase, so each compression codec keeps its own vectors) and written with a manifest holding
  the values this script chose (topics, records, the advertised broker address), which are independent of any
  decoder.

Usage: python3 tests/golden/record_golden.py [--out tests/golden] [--kafkajs-dir /tmp/kafkajs-golden]
"""
from __future__ import annotations

import argparse
import asyncio
import ctypes
import glob
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))

API_NAMES = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 4: "LeaderAndIsr", 5: "StopReplica",
    6: "UpdateMetadata", 7: "ControlledShutdown", 8: "OffsetCommit", 9: "OffsetFetch",
    10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
    15: "DescribeGroups", 16: "ListGroups", 17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics",
    20: "DeleteTopics", 21: "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch",
    24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 27: "WriteTxnMarkers",
    28: "TxnOffsetCommit", 29: "DescribeAcls", 30: "CreateAcls", 31: "DeleteAcls", 32: "DescribeConfigs",
    33: "AlterConfigs", 34: "AlterReplicaLogDirs", 35: "DescribeLogDirs", 36: "SaslAuthenticate",
    37: "CreatePartitions", 38: "CreateDelegationToken", 39: "RenewDelegationToken",
    40: "ExpireDelegationToken", 41: "DescribeDelegationToken", 42: "DeleteGroups", 43: "ElectLeaders",
    44: "IncrementalAlterConfigs", 45: "AlterPartitionReassignments", 46: "ListPartitionReassignments",
    47: "OffsetDelete", 48: "DescribeClientQuotas", 49: "AlterClientQuotas",
    50: "DescribeUserScramCredentials", 51: "AlterUserScramCredentials", 52: "Vote",
    53: "BeginQuorumEpoch", 54: "EndQuorumEpoch", 55: "DescribeQuorum", 56: "AlterPartition",
    57: "UpdateFeatures", 58: "Envelope", 59: "FetchSnapshot", 60: "DescribeCluster",
    61: "DescribeProducers", 62: "BrokerRegistration", 63: "BrokerHeartbeat", 64: "UnregisterBroker",
    65: "DescribeTransactions", 66: "ListTransactions", 67: "AllocateProducerIds",
    68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe", 70: "ControllerRegistration",
    71: "GetTelemetrySubscriptions", 72: "PushTelemetry", 73: "AssignReplicasToDirs",
    74: "ListClientMetricsResources", 75: "DescribeTopicPartitions", 76: "ShareGroupHeartbeat",
    77: "ShareGroupDescribe", 78: "ShareFetch", 79: "ShareAcknowledge", 80: "AddRaftVoter",
    81: "RemoveRaftVoter", 82: "UpdateRaftVoter", 83: "InitializeShareGroupState",
    84: "ReadShareGroupState", 85: "WriteShareGroupState", 86: "DeleteShareGroupState",
    87: "ReadShareGroupStateSummary", 88: "StreamsGroupHeartbeat", 89: "StreamsGroupDescribe",
    90: "DescribeShareGroupOffsets", 91: "AlterShareGroupOffsets", 92: "DeleteShareGroupOffsets",
}

MAX_PER_KEY = 2          # frames kept per (client, api, version, direction[, phase for Produce/Fetch])
MAX_FRAME_BYTES = 24_000  # larger frames are dropped (keeps the corpus small)
PRODUCE, FETCH = 0, 1


# ----------------------------------------------------------------------------------------------------------
# What each client produces: chosen here, so the expectations never come from a decoder.
# ----------------------------------------------------------------------------------------------------------

@dataclass
class Rec:
    key: str | None
    value: str | None
    headers: list[tuple[str, str | None]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "headers": [list(h) for h in self.headers]}

    def kb(self) -> bytes | None:
        return None if self.key is None else self.key.encode()

    def vb(self) -> bytes | None:
        return None if self.value is None else self.value.encode()

    def hb(self) -> list[tuple[str, bytes | None]]:
        return [(k, None if v is None else v.encode()) for k, v in self.headers]


def records_for(client: str, codec: str, *, nulls: bool = False, n: int = 3) -> list[Rec]:
    """Three records: short, long-and-compressible, and (optionally) null key/value/header."""
    out = [
        Rec(f"{client}-k0", f"{client} {codec} value 0", [("golden-idx", "0")]),
        Rec(f"{client}-k1", f"{client} {codec} value 1 " + "abcdefgh" * 12,
            [("golden-idx", "1"), ("golden-client", client)]),
        Rec(f"{client}-k2", f"{client} {codec} value 2", [("golden-idx", "2")]),
    ][:n]
    if nulls:
        out[-1] = Rec(None, None, [("golden-idx", "2"), ("golden-null", None)])
    return out


def topic(client: str, what: str) -> str:
    return f"golden.{client}.{what}"


CLIENT_IDS = {
    "confluent": "golden-confluent",
    "kafka-python": "golden-kafka-python",
    "aiokafka": "golden-aiokafka",
    "kcat": "golden-kcat",
    "kafkajs": "golden-kafkajs",
}


# ----------------------------------------------------------------------------------------------------------
# Mock cluster helper process (ctypes on the librdkafka bundled with confluent-kafka)
# ----------------------------------------------------------------------------------------------------------

def mock_helper(advertised_port: int, topics: list[str]) -> None:
    import confluent_kafka
    libdir = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
    cands = sorted(glob.glob(os.path.join(libdir, "librdkafka*.so*")))
    if not cands:
        raise SystemExit(f"no librdkafka shared library under {libdir}")
    lib = ctypes.CDLL(cands[0])
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    lib.rd_kafka_conf_new.restype = vp
    lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, ctypes.c_size_t]
    lib.rd_kafka_new.restype = vp
    lib.rd_kafka_new.argtypes = [ctypes.c_int, vp, cp, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = vp
    lib.rd_kafka_mock_cluster_new.argtypes = [vp, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype = cp
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
    lib.rd_kafka_mock_broker_set_host_port.argtypes = [vp, ctypes.c_int32, cp, ctypes.c_int]
    lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, ctypes.c_int, ctypes.c_int]
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, 512)
    rk = lib.rd_kafka_new(0, conf, errstr, 512)
    if not rk:
        raise SystemExit(f"rd_kafka_new failed: {errstr.value!r}")
    mc = lib.rd_kafka_mock_cluster_new(rk, 1)
    if not mc:
        raise SystemExit("rd_kafka_mock_cluster_new failed")
    for t in topics:
        err = lib.rd_kafka_mock_topic_create(mc, t.encode(), 1, 1)
        if err:
            raise SystemExit(f"mock topic create {t}: error {err}")
    listen = lib.rd_kafka_mock_cluster_bootstraps(mc).decode()
    lib.rd_kafka_mock_broker_set_host_port(mc, 1, b"127.0.0.1", advertised_port)
    print(f"MOCK {listen}", flush=True)
    sys.stdin.read()  # live until the parent closes our stdin
    os._exit(0)  # skip librdkafka teardown (the mock would insist on explicit destroy ordering)


# ----------------------------------------------------------------------------------------------------------
# Recording proxy
# ----------------------------------------------------------------------------------------------------------

@dataclass
class Frame:
    seq: int
    conn: int
    client: str
    phase: str
    direction: str  # "request" | "response"
    data: bytes
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


class Recorder:
    def __init__(self, upstream: tuple[str, int] | None = None) -> None:
        self.lock = threading.Lock()
        self.frames: list[Frame] = []
        self.label = ("none", "none")
        self.upstream = upstream
        self.conn_counter = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]

    def start(self) -> None:
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _accept_loop(self) -> None:
        while True:
            try:
                down, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conn_counter += 1
                conn_id = self.conn_counter
                label = self.label
            assert self.upstream is not None
            try:
                up = socket.create_connection(self.upstream)
            except OSError:
                down.close()
                continue
            for s in (down, up):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pending: dict[int, tuple[int, int, str | None]] = {}
            state = {"open": 2}
            threading.Thread(target=self._pump, args=(down, up, "request", conn_id, label, pending, state),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, "response", conn_id, label, pending, state),
                             daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str, conn_id: int,
              label: tuple[str, str], pending: dict, state: dict) -> None:
        buf = bytearray()
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 4:
                    size = struct.unpack_from(">i", buf, 0)[0]
                    if len(buf) < 4 + size:
                        break
                    frame = bytes(buf[:4 + size])
                    del buf[:4 + size]
                    self._record(frame, direction, conn_id, label, pending)
                dst.sendall(chunk)  # forwarded unchanged, after the frame was registered
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            with self.lock:
                state["open"] -= 1
                done = state["open"] == 0
            if done:
                src.close()
                dst.close()

    def _record(self, frame: bytes, direction: str, conn_id: int, label: tuple[str, str], pending: dict) -> None:
        if direction == "request":
            api_key, api_version, corr = struct.unpack_from(">hhi", frame, 4)
            (cid_len,) = struct.unpack_from(">h", frame, 12)
            client_id = None if cid_len < 0 else frame[14:14 + cid_len].decode("utf-8", "replace")
            with self.lock:
                pending[corr] = (api_key, api_version, client_id)
        else:
            (corr,) = struct.unpack_from(">i", frame, 4)
            with self.lock:
                api_key, api_version, client_id = pending.pop(corr, (-1, -1, None))
        with self.lock:
            self.frames.append(Frame(len(self.frames), conn_id, label[0], label[1], direction, frame,
                                     api_key, api_version, corr, client_id))

    def set_label(self, client: str, phase: str) -> None:
        with self.lock:
            self.label = (client, phase)


# ----------------------------------------------------------------------------------------------------------
# Client scenarios. Each returns a dict of expectations: {phase: {...}}.
# ----------------------------------------------------------------------------------------------------------

@dataclass
class Scenario:
    produced: dict[str, list[Rec]] = field(default_factory=dict)      # topic -> records (partition 0)
    produce_phase: dict[str, str] = field(default_factory=dict)       # topic -> phase that produced it
    consumed: dict[str, list[Rec]] = field(default_factory=dict)      # what the client reported back
    notes: list[str] = field(default_factory=list)


CONFLUENT_CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
AIOKAFKA_CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
KAFKA_PYTHON_CODECS = ["none", "gzip"]       # snappy/lz4/zstd need optional libraries not installed
KCAT_CODECS = ["none", "lz4"]
KAFKAJS_CODECS = ["none", "gzip"]           # kafkajs only ships gzip; others need codec plugins


def all_precreated_topics() -> list[str]:
    ts = [topic("confluent", c) for c in CONFLUENT_CODECS]
    ts += [topic("kafka-python", c) for c in KAFKA_PYTHON_CODECS]
    ts += [topic("aiokafka", c) for c in AIOKAFKA_CODECS]
    ts += [topic("kcat", c) for c in KCAT_CODECS]
    ts += [topic("kafkajs", c) for c in KAFKAJS_CODECS]
    return ts


def run_confluent(rec: Recorder, bootstrap: str) -> Scenario:
    from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
    from confluent_kafka.admin import AdminClient
    sc = Scenario()
    cid = CLIENT_IDS["confluent"]
    base = {"bootstrap.servers": bootstrap, "client.id": cid, "log_level": 3}

    # The mock implements no CreateTopics/DeleteTopics (see README): admin calls here are metadata reads.
    rec.set_label("confluent", "admin")
    admin = AdminClient(dict(base))
    admin.list_topics(timeout=10)
    admin.list_topics(topic=topic("confluent", "none"), timeout=10)
    del admin

    for codec in CONFLUENT_CODECS:
        phase = f"produce-{codec}"
        rec.set_label("confluent", phase)
        conf = dict(base, **{"compression.type": codec, "linger.ms": 200, "acks": "all"})
        if codec == "zstd":
            conf["enable.idempotence"] = True
        p = Producer(conf)
        t = topic("confluent", codec)
        recs = records_for("confluent", codec, nulls=(codec == "none"))
        errs: list[Any] = []
        for r in recs:
            p.produce(t, value=r.vb(), key=r.kb(), headers=r.hb(), partition=0,
                      on_delivery=lambda err, msg: errs.append(err) if err else None)
        left = p.flush(15)
        if left or errs:
            raise RuntimeError(f"confluent {codec}: {left} undelivered, errors {errs}")
        sc.produced[t], sc.produce_phase[t] = recs, phase
        del p

    rec.set_label("confluent", "consume")
    c = Consumer(dict(base, **{"group.id": "golden-confluent-group", "enable.auto.commit": False,
                               "auto.offset.reset": "earliest"}))
    c.assign([TopicPartition(t, 0, OFFSET_BEGINNING) for t in sc.produced])
    want = sum(len(v) for v in sc.produced.values())
    got: dict[str, list[Rec]] = {}
    deadline = time.time() + 30
    n = 0
    while n < want and time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        k, v = m.key(), m.value()
        got.setdefault(m.topic(), []).append(Rec(None if k is None else k.decode(), None if v is None else v.decode(),
                                                 [(hk, None if hv is None else hv.decode()) for hk, hv in (m.headers() or [])]))
        n += 1
    c.commit(asynchronous=False)
    c.close()
    sc.consumed = got

    # Group membership: the classic protocol (JoinGroup/SyncGroup/...) and KIP-848 (ConsumerGroupHeartbeat).
    for proto in ("classic", "consumer"):
        phase = f"group-{proto}"
        rec.set_label("confluent", phase)
        gconf = dict(base, **{"group.id": f"golden-confluent-{proto}", "auto.offset.reset": "earliest",
                              "group.protocol": proto, "enable.auto.commit": True,
                              "auto.commit.interval.ms": 500})
        if proto == "classic":
            gconf["session.timeout.ms"] = 6000
            gconf["heartbeat.interval.ms"] = 500
        c = Consumer(gconf)
        t = topic("confluent", "none")
        c.subscribe([t])
        seen = 0
        deadline = time.time() + 25
        while seen < len(sc.produced[t]) and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                seen += 1
        time.sleep(1.0)
        c.close()
        if seen < len(sc.produced[t]):
            sc.notes.append(f"{phase}: consumed only {seen} records")
    return sc


def run_kafka_python(rec: Recorder, bootstrap: str) -> Scenario:
    import logging
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    sc = Scenario()
    cid = CLIENT_IDS["kafka-python"]
    av = (2, 3)

    # The default bootstrap (ApiVersions v4 probing) does not complete against the mock; keep its bytes anyway.
    rec.set_label("kafka-python", "probe")
    try:
        p = KafkaProducer(bootstrap_servers=bootstrap, client_id=cid,
                          request_timeout_ms=3000, max_block_ms=3000)
        p.close(timeout=2)
        sc.notes.append("default-version bootstrap unexpectedly succeeded")
    except Exception as e:  # noqa: BLE001
        sc.notes.append(f"default-version bootstrap failed as expected: {type(e).__name__}")

    rec.set_label("kafka-python", "admin")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id=cid, api_version=av)
    admin.list_topics()
    admin.describe_topics([topic("kafka-python", "none")])
    admin.close()

    for codec in KAFKA_PYTHON_CODECS:
        phase = f"produce-{codec}"
        rec.set_label("kafka-python", phase)
        p = KafkaProducer(bootstrap_servers=bootstrap, client_id=cid, api_version=av, linger_ms=300, acks="all",
                          compression_type=None if codec == "none" else codec)
        t = topic("kafka-python", codec)
        recs = records_for("kafka-python", codec)
        futs = [p.send(t, key=r.kb(), value=r.vb(), headers=r.hb(), partition=0) for r in recs]
        p.flush(15)
        for f in futs:
            f.get(timeout=15)
        p.close(timeout=5)
        sc.produced[t], sc.produce_phase[t] = recs, phase

    rec.set_label("kafka-python", "consume")
    c = KafkaConsumer(bootstrap_servers=bootstrap, client_id=cid, api_version=av, enable_auto_commit=False)
    tps = [TopicPartition(t, 0) for t in sc.produced]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    want = sum(len(v) for v in sc.produced.values())
    got: dict[str, list[Rec]] = {}
    deadline = time.time() + 30
    n = 0
    while n < want and time.time() < deadline:
        for tp, msgs in c.poll(timeout_ms=500).items():
            for m in msgs:
                got.setdefault(tp.topic, []).append(Rec(
                    None if m.key is None else m.key.decode(), None if m.value is None else m.value.decode(),
                    [(hk, None if hv is None else hv.decode()) for hk, hv in m.headers]))
                n += 1
    c.close()
    sc.consumed = got
    return sc


def run_aiokafka(rec: Recorder, bootstrap: str) -> Scenario:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient
    sc = Scenario()
    cid = CLIENT_IDS["aiokafka"]

    async def main() -> None:
        rec.set_label("aiokafka", "admin")
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id=cid)
        await admin.start()
        await admin.list_topics()
        await admin.describe_topics([topic("aiokafka", "none")])
        await admin.close()

        for codec in AIOKAFKA_CODECS:
            phase = f"produce-{codec}"
            rec.set_label("aiokafka", phase)
            p = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=cid, linger_ms=300, acks="all",
                                 compression_type=None if codec == "none" else codec)
            await p.start()
            t = topic("aiokafka", codec)
            recs = records_for("aiokafka", codec)
            futs = [await p.send(t, key=r.kb(), value=r.vb(), headers=r.hb(), partition=0) for r in recs]
            await p.flush()
            for f in futs:
                await f
            await p.stop()
            sc.produced[t], sc.produce_phase[t] = recs, phase

        rec.set_label("aiokafka", "consume")
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id=cid, enable_auto_commit=False)
        await c.start()
        tps = [TopicPartition(t, 0) for t in sc.produced]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        want = sum(len(v) for v in sc.produced.values())
        n = 0
        deadline = time.time() + 30
        while n < want and time.time() < deadline:
            for tp, msgs in (await c.getmany(timeout_ms=500)).items():
                for m in msgs:
                    sc.consumed.setdefault(tp.topic, []).append(Rec(
                        None if m.key is None else m.key.decode(), None if m.value is None else m.value.decode(),
                        [(hk, None if hv is None else hv.decode()) for hk, hv in m.headers]))
                    n += 1
        await c.stop()

    asyncio.run(main())
    return sc


def run_kcat(rec: Recorder, bootstrap: str) -> Scenario:
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if not kcat:
        raise RuntimeError("kcat not installed (apt-get install -y kcat)")
    sc = Scenario()
    common = [kcat, "-b", bootstrap, "-X", f"client.id={CLIENT_IDS['kcat']}", "-q"]

    rec.set_label("kcat", "metadata")
    subprocess.run(common + ["-L"], check=True, capture_output=True, timeout=30)

    for codec in KCAT_CODECS:
        phase = f"produce-{codec}"
        rec.set_label("kcat", phase)
        t = topic("kcat", codec)
        # kcat applies the same -H headers to every message it produces.
        recs = [Rec(f"kcat-k{i}", f"kcat {codec} value {i}" + (" " + "abcdefgh" * 12 if i == 1 else ""),
                    [("golden-client", "kcat"), ("golden-codec", codec)]) for i in range(3)]
        stdin = "".join(f"{r.key}|{r.value}\n" for r in recs)
        cmd = common + ["-P", "-t", t, "-p", "0", "-K", "|", "-X", "linger.ms=300",
                        "-H", "golden-client=kcat", "-H", f"golden-codec={codec}"]
        if codec != "none":
            cmd += ["-z", codec]
        subprocess.run(cmd, input=stdin.encode(), check=True, capture_output=True, timeout=30)
        sc.produced[t], sc.produce_phase[t] = recs, phase

    rec.set_label("kcat", "consume")
    for t in sc.produced:
        out = subprocess.run(common + ["-C", "-t", t, "-p", "0", "-o", "beginning", "-e", "-f", "%k|%s\\n"],
                             check=True, capture_output=True, timeout=30).stdout.decode()
        sc.consumed[t] = [Rec(line.split("|", 1)[0], line.split("|", 1)[1],
                              [("golden-client", "kcat"), ("golden-codec", t.rsplit(".", 1)[1])])
                          for line in out.splitlines() if line]
    return sc


KAFKAJS_SCRIPT = r"""
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');
const [bootstrap, clientId, phase, arg] = process.argv.slice(2);
const kafka = new Kafka({ clientId, brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 3 } });
async function main() {
  if (phase === 'admin') {
    const { topic } = JSON.parse(arg);
    const admin = kafka.admin();
    await admin.connect();
    await admin.listTopics();
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.disconnect();
  } else if (phase === 'produce') {
    const { topic, codec, records } = JSON.parse(arg);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await producer.send({
      topic, acks: -1,
      compression: codec === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
      messages: records.map(r => ({ partition: 0, key: r.key, value: r.value,
        headers: Object.fromEntries(r.headers.map(([k, v]) => [k, v])) })),
    });
    await producer.disconnect();
  } else if (phase === 'consume') {
    const { topics, groupId, want } = JSON.parse(arg);
    const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    const got = [];
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timeout consuming')), 40000);
      consumer.run({ eachMessage: async ({ topic, message }) => {
        got.push({ topic, key: message.key && message.key.toString(), value: message.value && message.value.toString(),
                   headers: Object.entries(message.headers || {}).map(([k, v]) => [k, v && v.toString()]) });
        if (got.length >= want) { clearTimeout(timer); setTimeout(resolve, 1500); }
      } }).catch(reject);
    });
    await consumer.disconnect();
    process.stdout.write(JSON.stringify(got));
  }
}
main().then(() => process.exit(0), e => { console.error(e); process.exit(1); });
"""


def ensure_kafkajs(kdir: str) -> str:
    if not os.path.isdir(os.path.join(kdir, "node_modules", "kafkajs")):
        os.makedirs(kdir, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--prefix", kdir, "kafkajs@2.2.4"], check=True, timeout=300)
    path = os.path.join(kdir, "golden_kafkajs.js")
    with open(path, "w") as f:
        f.write(KAFKAJS_SCRIPT)
    return path


def run_kafkajs(rec: Recorder, bootstrap: str, kdir: str) -> Scenario:
    script = ensure_kafkajs(kdir)
    sc = Scenario()
    cid = CLIENT_IDS["kafkajs"]

    def node(phase: str, arg: Any) -> str:
        r = subprocess.run(["node", script, bootstrap, cid, phase, json.dumps(arg)], capture_output=True,
                           timeout=90, cwd=kdir)
        if r.returncode:
            raise RuntimeError(f"kafkajs {phase} failed: {r.stderr.decode()[-2000:]}")
        return r.stdout.decode()

    rec.set_label("kafkajs", "admin")
    node("admin", {"topic": topic("kafkajs", "none")})

    for codec in KAFKAJS_CODECS:
        phase = f"produce-{codec}"
        rec.set_label("kafkajs", phase)
        t = topic("kafkajs", codec)
        recs = records_for("kafkajs", codec)
        node("produce", {"topic": t, "codec": codec, "records": [r.to_json() for r in recs]})
        sc.produced[t], sc.produce_phase[t] = recs, phase

    rec.set_label("kafkajs", "consume")
    out = json.loads(node("consume", {"topics": list(sc.produced), "groupId": "golden-kafkajs-group",
                                      "want": sum(len(v) for v in sc.produced.values())}))
    for m in out:
        sc.consumed.setdefault(m["topic"], []).append(Rec(m["key"], m["value"], [tuple(h) for h in m["headers"]]))
    return sc


# ----------------------------------------------------------------------------------------------------------
# Selection, expectations, output
# ----------------------------------------------------------------------------------------------------------

def topics_in(data: bytes, topics: list[str]) -> list[str]:
    """Script-chosen topic names present literally in the frame (no decoding involved)."""
    return sorted(t for t in topics if t.encode() in data)


def select(frames: list[Frame]) -> list[Frame]:
    """At most MAX_PER_KEY frames per (client, api, version, direction[, phase for Produce/Fetch]).

    Fetch: the largest responses (the ones carrying records) are chosen first, then their requests.
    Everything else: the earliest requests, then their responses. Oversized frames are dropped.
    """
    frames = [f for f in frames if len(f.data) <= MAX_FRAME_BYTES and f.api_key >= 0]
    groups: dict[tuple, list[Frame]] = {}
    for f in frames:
        variant = f.phase if f.api_key in (PRODUCE, FETCH) else ""
        groups.setdefault((f.client, f.api_key, f.api_version, variant), []).append(f)
    keep: list[Frame] = []
    for (_client, api_key, _v, _var), fs in groups.items():
        reqs = [f for f in fs if f.direction == "request"]
        resps = [f for f in fs if f.direction == "response"]
        if api_key == FETCH:
            first = sorted(resps, key=lambda f: (-len(f.data), f.seq))[:MAX_PER_KEY]
            second_pool = reqs
        else:
            first = sorted(reqs, key=lambda f: f.seq)[:MAX_PER_KEY]
            second_pool = resps
        chosen_pairs = {(f.conn, f.correlation_id) for f in first}
        second = sorted(second_pool, key=lambda f: ((f.conn, f.correlation_id) not in chosen_pairs, f.seq))
        keep += first + second[:MAX_PER_KEY]
    return sorted(keep, key=lambda f: f.seq)


def frame_entry(f: Frame, fname: str, sc: Scenario, all_topics: list[str]) -> dict[str, Any]:
    e: dict[str, Any] = {
        "file": fname, "client": f.client, "phase": f.phase, "connection": f.conn,
        "api_key": f.api_key, "api_name": API_NAMES.get(f.api_key, f"Api{f.api_key}"),
        "api_version": f.api_version, "direction": f.direction, "correlation_id": f.correlation_id,
        "client_id": f.client_id, "size": len(f.data),
        "topics_mentioned": topics_in(f.data, all_topics),
    }
    if f.api_key == PRODUCE and f.direction == "request":
        # The records are in manifest["clients"][client]["produced"][topic]["records"].
        e["produced_topics"] = [t for t in e["topics_mentioned"] if t in sc.produced]
    if f.api_key == FETCH and f.direction == "response":
        # Records of a topic in a Fetch response are a contiguous run of what the client produced to it
        # (manifest["clients"][client]["produced"]); these values are visible uncompressed in the frame.
        e["values_present_literally"] = sorted(
            r.value for recs in sc.produced.values() for r in recs if r.value and r.value.encode() in f.data)
    e["kio_check"] = kio_check(f)
    if e["kio_check"]["status"] in ("error", "trailing"):
        e["quirk"] = f"irregular frame per kio: {e['kio_check']['detail']}"
    if f.api_key == 18 and f.direction == "response":
        # Every ApiVersions response version starts with error_code right after the (v0) header.
        (e["error_code"],) = struct.unpack_from(">h", f.data, 8)
        if e["error_code"] == 35:
            e["quirk"] = ("librdkafka mock's UNSUPPORTED_VERSION reply: the body matches neither the v0 nor the "
                          "requested version's layout exactly (clients only read error_code, then retry)")
    return e


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _skip_tags(buf: bytes, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def kio_check(f: Frame) -> dict[str, Any]:
    """Does the independent decoder kio consume this body exactly? Used only to flag irregular frames
    (trailing or missing bytes) so the tests can treat them apart; no expected value comes from kio."""
    try:
        from kio.index import load_request_schema, load_response_schema
        from kio.serial import entity_reader
    except ImportError:
        return {"status": "no-kio"}
    try:
        loader = load_request_schema if f.direction == "request" else load_response_schema
        schema = loader(f.api_key, f.api_version)
    except Exception:  # noqa: BLE001 - kio's UnknownAPIKey / UnknownEntity
        return {"status": "no-schema"}
    flexible = bool(getattr(schema, "__flexible__", False))
    d = f.data
    if f.direction == "request":
        (cid_len,) = struct.unpack_from(">h", d, 12)
        pos = 14 + max(cid_len, 0)
        if flexible:
            pos = _skip_tags(d, pos)
    else:
        pos = 8
        if flexible and f.api_key != 18:  # ApiVersions responses always use header v0
            pos = _skip_tags(d, pos)
    try:
        _, size = entity_reader(schema)(d, pos)
    except Exception as e:  # noqa: BLE001
        return {"status": "error", "detail": f"{type(e).__name__}: {e}"}
    if pos + size != len(d):
        return {"status": "trailing", "detail": f"{len(d) - pos - size} byte(s) after the body kio decodes",
                "trailing_bytes": len(d) - pos - size}
    return {"status": "ok"}


def sanity_check(client: str, frames: list[Frame], sc: Scenario) -> list[str]:
    problems = []
    want_cid = CLIENT_IDS[client]
    for f in frames:
        if f.direction == "request" and f.client_id != want_cid:
            problems.append(f"{client}: request seq {f.seq} has client_id {f.client_id!r}")
    for t, ph in sc.produce_phase.items():
        n = sum(1 for f in frames if f.api_key == PRODUCE and f.direction == "request" and f.phase == ph
                and t.encode() in f.data)
        if n != 1:
            problems.append(f"{client}: {n} Produce requests carry {t} (expected exactly 1)")
    for t, recs in sc.produced.items():
        got = sc.consumed.get(t, [])
        if [r.to_json() for r in got] != [r.to_json() for r in recs]:
            problems.append(f"{client}: consumed from {t} {[r.to_json() for r in got]} != produced")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--kafkajs-dir", default=os.path.join(tempfile.gettempdir(), "kafkajs-golden"))
    ap.add_argument("--clients", default="confluent,kafka-python,aiokafka,kcat,kafkajs")
    ap.add_argument("--mock-helper", type=int, metavar="ADVERTISED_PORT", help=argparse.SUPPRESS)
    ap.add_argument("topics", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mock_helper:
        mock_helper(args.mock_helper, args.topics)
        return 0

    rec = Recorder()
    helper = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--mock-helper", str(rec.port),
                               *all_precreated_topics()], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert helper.stdout is not None
        line = helper.stdout.readline().decode().strip()
        if not line.startswith("MOCK "):
            raise RuntimeError(f"mock helper said {line!r}")
        host, port = line.split()[1].split(",")[0].rsplit(":", 1)
        rec.upstream = (host, int(port))
        rec.start()
        bootstrap = f"127.0.0.1:{rec.port}"
        print(f"mock broker listens on {host}:{port}, advertises proxy {bootstrap}", file=sys.stderr)

        runners = {
            "confluent": lambda: run_confluent(rec, bootstrap),
            "kafka-python": lambda: run_kafka_python(rec, bootstrap),
            "aiokafka": lambda: run_aiokafka(rec, bootstrap),
            "kcat": lambda: run_kcat(rec, bootstrap),
            "kafkajs": lambda: run_kafkajs(rec, bootstrap, args.kafkajs_dir),
        }
        scenarios: dict[str, Scenario] = {}
        for name in args.clients.split(","):
            print(f"recording {name} ...", file=sys.stderr)
            scenarios[name] = runners[name]()
            time.sleep(1.0)  # let trailing frames (LeaveGroup, close) drain
        rec.set_label("none", "none")
    finally:
        if helper.stdin:
            helper.stdin.close()
        helper.wait(timeout=10)

    with rec.lock:
        frames = list(rec.frames)
    problems: list[str] = []
    all_topics = sorted({t for sc in scenarios.values() for t in sc.produced} | set(all_precreated_topics()))
    manifest: dict[str, Any] = {
        "generator": "tests/golden/record_golden.py", "tools": tool_versions(),
        # Set by this script through rd_kafka_mock_broker_set_host_port: what Metadata/FindCoordinator return.
        "advertised_broker": {"node_id": 1, "host": "127.0.0.1", "port": rec.port},
        "topics": {t: {"partitions": 1} for t in all_precreated_topics()},
        "clients": {}, "files": []}
    for client, sc in scenarios.items():
        cframes = [f for f in frames if f.client == client]
        problems += sanity_check(client, cframes, sc)
        cdir = os.path.join(args.out, client)
        shutil.rmtree(cdir, ignore_errors=True)
        os.makedirs(cdir)
        index = {f.seq: i for i, f in enumerate(cframes)}
        for f in select(cframes):
            fname = (f"{client}/{index[f.seq]:03d}_{f.api_key:02d}_{API_NAMES.get(f.api_key, 'Unknown')}"
                     f"_v{f.api_version}_{f.direction}.bin")
            with open(os.path.join(args.out, fname), "wb") as fh:
                fh.write(f.data)
            manifest["files"].append(frame_entry(f, fname, sc, all_topics))
        manifest["clients"][client] = {
            "client_id": CLIENT_IDS[client],
            "frames_seen": len(cframes),
            "produced": {t: {"phase": sc.produce_phase[t], "partition": 0,
                             "records": [r.to_json() for r in recs]} for t, recs in sc.produced.items()},
            "notes": sc.notes,
        }
    with open(os.path.join(args.out, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=False)
        fh.write("\n")
    total = sum(e["size"] for e in manifest["files"])
    print(f"wrote {len(manifest['files'])} frames, {total} bytes", file=sys.stderr)
    for p in problems:
        print("PROBLEM:", p, file=sys.stderr)
    return 1 if problems else 0


def tool_versions() -> dict[str, str]:
    out: dict[str, str] = {"python": sys.version.split()[0]}
    try:
        import confluent_kafka
        v = confluent_kafka.version()
        out["confluent-kafka"] = v if isinstance(v, str) else v[0]
        out["librdkafka (confluent-kafka, mock cluster)"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    for mod, name in (("kafka", "kafka-python"), ("aiokafka", "aiokafka")):
        try:
            out[name] = __import__(mod).__version__
        except ImportError:
            pass
    kcat = shutil.which("kcat")
    if kcat:
        v = subprocess.run([kcat, "-V"], capture_output=True).stdout.decode()
        out["kcat"] = " ".join(line.strip() for line in v.splitlines() if "version" in line.lower())
    try:
        out["node"] = subprocess.run(["node", "--version"], capture_output=True).stdout.decode().strip()
    except OSError:
        pass
    out["kafkajs"] = "2.2.4"
    return out


if __name__ == "__main__":
    sys.exit(main())
