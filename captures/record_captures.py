"""Record the captures shipped in this directory: real clients talking to a real broker, sniffed on loopback
by tcpdump, each with the values the clients themselves sent and were told in NAME.json.

    python3 captures/record_captures.py [--only NAME ...]

Needs root (tcpdump on lo), tcpdump, tshark (for the frame map of the derived captures and the version
note), confluent-kafka, kafka-python, aiokafka, kcat. See README.md for what each capture holds. Nothing
here uses kafkalab to decide an expected value: the broker is librdkafka's mock cluster (started through
tests/capture/mock_cluster.py) except for the admin capture, which needs admin APIs the mock lacks and so
uses kafkalab's own broker, but the expected values are still what the admin client reported; the derived
captures (midstream, lossy) are cut from a recording with scapy's raw pcap reader, and their frame map comes
from walking the clean byte streams with struct.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tests.capture.mock_cluster import mock_cluster  # noqa: E402

TOPIC = "orders"
PARTITIONS = 2
MESSAGES = 24


# ---------------------------------------------------------------- sniffing

class Tcpdump:
    """tcpdump on lo for one TCP port, writing a microsecond pcap; stopped with SIGINT (flushes)."""

    def __init__(self, path: Path, port: int) -> None:
        self.path, self.port = path, port
        self.proc: subprocess.Popen | None = None
        self.summary = ""

    def __enter__(self) -> Tcpdump:
        command = ["tcpdump", "-i", "lo", "--immediate-mode", "-U", "-s", "0", "-n", "-w", str(self.path),
                   f"tcp port {self.port}"]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        if "listening on" not in line:
            raise RuntimeError(f"tcpdump did not start: {line!r}")
        time.sleep(0.3)
        return self

    def __exit__(self, *exc) -> None:
        time.sleep(1.0)                          # the last ACKs and FINs
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=10)
        self.summary = " ".join(err.split())
        numbers = [int(w) for w in self.summary.split() if w.isdigit()]
        # on lo the filter sees each packet twice (sent and received) and libpcap keeps one copy
        if exc[0] is None and (len(numbers) < 3 or numbers[0] * 2 != numbers[1] or numbers[2]):
            raise RuntimeError(f"tcpdump missed packets: {self.summary}")


def versions() -> dict[str, str]:
    import aiokafka
    import confluent_kafka
    import kafka

    kcat = subprocess.run(["kcat", "-V"], capture_output=True, text=True).stdout.splitlines()
    kcat_version = next((line.split("(")[0].split()[-1] + " (librdkafka " + line.split("librdkafka ")[1].split()[0]
                         + ")" for line in kcat if line.startswith("Version") and "librdkafka " in line), "?")
    tshark = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    tcpdump = subprocess.run(["tcpdump", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return {"confluent-kafka": f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})",
            "kafka-python": kafka.__version__, "aiokafka": aiokafka.__version__, "kcat": kcat_version,
            "tshark": tshark, "tcpdump": tcpdump}


# ---------------------------------------------------------------- messages and clients

def messages(codec: str, count: int = MESSAGES) -> list[dict]:
    """Compressible JSON-ish values (so every codec really compresses), unique keys, a header each."""
    out = []
    for i in range(count):
        value = json.dumps({"order": i, "codec": codec, "item": f"widget-{i % 7}", "note": "lab " * (8 + i % 5)})
        out.append({"key": f"{codec}-key-{i:03d}".encode(), "value": value.encode(), "partition": i % PARTITIONS,
                    "headers": [["source", b"kafkalab-captures"]]})
    return out


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


def _record(topic, partition, offset, key, value, headers, timestamp) -> dict:
    return {"topic": topic, "partition": partition, "offset": offset, "key": _hex(key), "value": _hex(value),
            "headers": [[k, _hex(v)] for k, v in (headers or [])], "timestamp": timestamp}


def confluent_roundtrip(bootstrap: str, codec: str, group: str) -> dict:
    import confluent_kafka as ck

    produced = []
    producer = ck.Producer({"bootstrap.servers": bootstrap, "client.id": f"lab-confluent-{codec}",
                            "compression.type": codec, "linger.ms": 100, "acks": "all"})

    def delivered(err, msg):
        if err is None:
            produced.append(_record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                                    msg.headers(), msg.timestamp()[1]))
    for m in messages(codec):
        producer.produce(TOPIC, key=m["key"], value=m["value"], partition=m["partition"],
                         headers=[tuple(h) for h in m["headers"]], on_delivery=delivered)
    assert producer.flush(20) == 0
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"lab-confluent-{codec}",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    consumed = []
    deadline = time.time() + 30
    while len(consumed) < len(produced) and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            consumed.append(_record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                                    msg.headers(), msg.timestamp()[1]))
    consumer.commit(asynchronous=False)
    consumer.close()
    sent = {_hex(m["key"]): m for m in messages(codec)}
    for p in produced:                         # delivery reports carry no headers: the ones sent
        p["headers"] = [[k, _hex(v)] for k, v in sent[p["key"]]["headers"]]
    return {"client": "confluent-kafka", "client_ids": [f"lab-confluent-{codec}"], "produced": produced,
            "consumed": consumed, "produced_from": "delivery reports (topic, partition, offset) and the headers "
            "sent"}


def kafka_python_roundtrip(bootstrap: str, codec: str, group: str) -> dict:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    client_id = f"lab-kafka-python-{codec}"
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, compression_type=codec,
                             linger_ms=100, acks="all", api_version=(2, 3))
    futures = [(m, producer.send(TOPIC, key=m["key"], value=m["value"], partition=m["partition"],
                                 headers=[(k, v) for k, v in m["headers"]])) for m in messages(codec)]
    producer.flush(20)
    produced = []
    for m, future in futures:
        meta = future.get(10)
        produced.append(_record(meta.topic, meta.partition, meta.offset, m["key"], m["value"], m["headers"],
                                meta.timestamp))
    producer.close()
    # assign(), not subscribe(): kafka-python's group join does not complete against the mock; the group id
    # still brings FindCoordinator and OffsetCommit
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=client_id, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False, api_version=(2, 3),
                             consumer_timeout_ms=3000)
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    consumed = []
    for msg in consumer:
        consumed.append(_record(msg.topic, msg.partition, msg.offset, msg.key, msg.value,
                                [[k, v] for k, v in msg.headers], msg.timestamp))
        if len(consumed) == len(produced):
            break
    consumer.commit()
    consumer.close()
    return {"client": "kafka-python", "client_ids": [client_id], "produced": produced, "consumed": consumed}


def aiokafka_roundtrip(bootstrap: str, codec: str, group: str) -> dict:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    client_id = f"lab-aiokafka-{codec}"

    async def run():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, compression_type=codec,
                                    linger_ms=100, acks="all")
        await producer.start()
        try:
            sent = [(m, await producer.send(TOPIC, key=m["key"], value=m["value"], partition=m["partition"],
                                            headers=[(k, v) for k, v in m["headers"]])) for m in messages(codec)]
            produced = []
            for m, future in sent:
                meta = await future
                produced.append(_record(meta.topic, meta.partition, meta.offset, m["key"], m["value"], m["headers"],
                                        meta.timestamp))
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, client_id=client_id, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        consumed = []
        try:
            deadline = time.time() + 30
            while len(consumed) < len(produced) and time.time() < deadline:
                batch = await consumer.getmany(timeout_ms=500)
                for records in batch.values():
                    for msg in records:
                        consumed.append(_record(msg.topic, msg.partition, msg.offset, msg.key, msg.value,
                                                [[k, v] for k, v in msg.headers], msg.timestamp))
            await consumer.commit()
        finally:
            await consumer.stop()
        return produced, consumed

    produced, consumed = asyncio.run(run())
    return {"client": "aiokafka", "client_ids": [client_id], "produced": produced, "consumed": consumed}


def kcat_roundtrip(bootstrap: str, codec: str, group: str) -> dict:
    """kcat -P then kcat -C -J: what went in is known; offsets and timestamps come from kcat's own output."""
    client_id = f"lab-kcat-{codec}"
    sent = messages(codec)
    for partition in range(PARTITIONS):
        lines = b"".join(m["key"] + b"\t" + m["value"] + b"\n" for m in sent if m["partition"] == partition)
        subprocess.run(["kcat", "-b", bootstrap, "-P", "-t", TOPIC, "-p", str(partition), "-z", codec, "-K", "\t",
                        "-H", "source=kafkalab-captures", "-X", f"client.id={client_id}", "-X", "linger.ms=100"],
                       input=lines, check=True, timeout=30)
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-J",
                          "-X", f"client.id={client_id}"], capture_output=True, check=True, timeout=60).stdout
    consumed = []
    for line in out.decode().splitlines():
        item = json.loads(line)
        headers = item.get("headers") or []
        pairs = [[headers[i], headers[i + 1].encode()] for i in range(0, len(headers), 2)]
        consumed.append(_record(item["topic"], item["partition"], item["offset"],
                                None if item["key"] is None else item["key"].encode(),
                                None if item["payload"] is None else item["payload"].encode(), pairs, item["ts"]))
    by_key = {c["key"]: c for c in consumed}
    produced = [dict(by_key[_hex(m["key"])]) for m in sent if _hex(m["key"]) in by_key]
    return {"client": "kcat", "client_ids": [client_id], "produced": produced, "consumed": consumed,
            "produced_from": "what kcat -P was given, with the offsets kcat -C reported for each key"}


ROUNDTRIPS = {
    "produce-consume-none": ("none", confluent_roundtrip),
    "produce-consume-gzip": ("gzip", kafka_python_roundtrip),
    "produce-consume-snappy": ("snappy", aiokafka_roundtrip),
    "produce-consume-lz4": ("lz4", kcat_roundtrip),
    "produce-consume-zstd": ("zstd", confluent_roundtrip),
}


def record_roundtrip(name: str) -> None:
    codec, run = ROUNDTRIPS[name]
    pcap = HERE / f"{name}.pcap"
    with mock_cluster({TOPIC: PARTITIONS}) as (host, port):
        with Tcpdump(pcap, port) as dump:
            result = run(f"{host}:{port}", codec, f"lab-group-{codec}")
    assert len(result["produced"]) == MESSAGES and len(result["consumed"]) >= MESSAGES, \
        (len(result["produced"]), len(result["consumed"]))
    # The mock answers Produce with log_append_time_ms 1234, and clients report that as the record's
    # timestamp: keep it as "reported_timestamp"; "timestamp" is the create time the consumer read back.
    read = {c["key"]: c for c in result["consumed"]}
    for p in result["produced"]:
        p["reported_timestamp"] = p["timestamp"]
        p["timestamp"] = read[p["key"]]["timestamp"]
    expected = {"capture": pcap.name, "broker": "librdkafka mock cluster (one broker)", "port": port,
                "topic": TOPIC, "partitions": PARTITIONS, "codec": codec, **result, "tcpdump": dump.summary}
    _write_expected(name, expected)


# ---------------------------------------------------------------- admin (kafkalab's broker; the client decides)

def record_admin() -> None:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

    from kafkalab.broker import Broker

    pcap = HERE / "admin.pcap"
    outcomes: list[dict] = []

    def settle(operation: str, futures: dict) -> None:
        for key, future in futures.items():
            try:
                value = future.result(15)
                outcome = {"operation": operation, "target": str(key), "ok": True, "result": _plain(value)}
            except ck.KafkaException as exc:
                error = exc.args[0]
                outcome = {"operation": operation, "target": str(key), "ok": False, "error": error.name(),
                           "error_code": error.code()}
            outcomes.append(outcome)

    with Broker(topics={"existing": 1}) as broker:
        host, port = broker.address
        with Tcpdump(pcap, port) as dump:
            admin = AdminClient({"bootstrap.servers": f"{host}:{port}", "client.id": "lab-admin"})
            settle("create_topics", admin.create_topics([NewTopic("admin-a", 3, 1),
                                                         NewTopic("admin-b", 1, 1, config={"retention.ms": "3600000"}),
                                                         NewTopic("existing", 1, 1)], operation_timeout=10))
            time.sleep(0.3)
            settle("describe_configs", admin.describe_configs([ConfigResource("TOPIC", "admin-b")]))
            settle("create_partitions", admin.create_partitions([NewPartitions("admin-a", 5)]))
            metadata = admin.list_topics(timeout=10)
            topics = {name: len(t.partitions) for name, t in sorted(metadata.topics.items())}
            settle("delete_topics", admin.delete_topics(["admin-b", "missing-topic"], operation_timeout=10))
            time.sleep(0.3)
            after = sorted(admin.list_topics(timeout=10).topics)
    expected = {"capture": pcap.name, "broker": "kafkalab.broker.Broker (in-process; the admin APIs are what the "
                "librdkafka mock lacks)", "port": port, "client": "confluent-kafka AdminClient",
                "client_ids": ["lab-admin"], "outcomes": outcomes, "topics_after_create": topics,
                "topics_after_delete": after, "tcpdump": dump.summary}
    _write_expected("admin", expected)


def _plain(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "value") and hasattr(value, "name"):          # ConfigEntry
        return {"name": value.name, "value": value.value}
    return str(value)


# ---------------------------------------------------------------- derived captures: mid-stream and lossy

def record_source() -> tuple[Path, dict]:
    """A producer sending one message per request, two of them larger than one loopback segment."""
    import confluent_kafka as ck

    pcap = HERE / "_source.pcap"
    produced = []
    sizes = [200] * 6 + [70_000] + [200] * 5 + [90_000] + [200] * 6
    with mock_cluster({TOPIC: PARTITIONS}) as (host, port):
        with Tcpdump(pcap, port):
            producer = ck.Producer({"bootstrap.servers": f"{host}:{port}", "client.id": "lab-stream",
                                    "linger.ms": 0, "acks": "all", "compression.type": "none"})
            rng = random.Random(7)
            for i, size in enumerate(sizes):
                value = (f"stream-message-{i:03d}:".encode() + bytes(rng.randrange(256) for _ in range(size)))
                producer.produce(TOPIC, key=b"stream-%03d" % i, value=value, partition=i % PARTITIONS,
                                 on_delivery=lambda err, msg: produced.append(
                                     _record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                                             msg.headers(), msg.timestamp()[1])) if err is None else None)
                producer.flush(10)                   # one request per message
    return pcap, {"port": port, "produced": produced}


def _packets(path: Path):
    """(header, data, parsed) for every record of a pcap, with scapy's raw reader (not kafkalab's)."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.utils import RawPcapReader

    out = []
    for data, meta in RawPcapReader(str(path)):
        packet = Ether(data)
        tcp = packet[TCP] if TCP in packet else None
        parsed = None
        if tcp is not None:
            parsed = {"src": (packet[IP].src, tcp.sport), "dst": (packet[IP].dst, tcp.dport), "seq": tcp.seq,
                      "flags": int(tcp.flags), "payload": bytes(tcp.payload)}
        out.append((meta, data, parsed))
    return out


def frame_map(packets: list, server_port: int, keys: list[bytes] = ()) -> list[dict]:
    """Every Kafka frame of the clean capture: per direction, the stream reassembled by sequence number (the
    SYN gives offset 0) and walked by size prefix; with the packets (indexes) each frame's bytes came in."""
    streams: dict[tuple, dict] = {}
    for index, (_, _, p) in enumerate(packets):
        if p is None:
            continue
        key = (p["src"], p["dst"])
        s = streams.setdefault(key, {"isn": None, "chunks": {}})
        if p["flags"] & 0x02:
            s["isn"] = p["seq"]
        elif p["payload"]:
            offset = (p["seq"] - s["isn"] - 1) % (1 << 32)
            s["chunks"].setdefault(offset, (p["payload"], index))
    frames = []
    for (src, dst), s in sorted(streams.items(), key=lambda item: min(i for _, i in item[1]["chunks"].values())
                                if item[1]["chunks"] else 0):
        data = bytearray()
        owner: list[int] = []
        for offset in sorted(s["chunks"]):
            payload, index = s["chunks"][offset]
            assert offset == len(data), "the source capture must be clean"
            data += payload
            owner += [index] * len(payload)
        request = dst[1] == server_port
        pos = 0
        while pos + 4 <= len(data):
            size = struct.unpack_from(">i", data, pos)[0]
            raw = bytes(data[pos:pos + 4 + size])
            entry = {"direction": "request" if request else "response", "client": f"{(src if request else dst)[1]}",
                     "stream_offset": pos, "length": len(raw), "sha256": hashlib.sha256(raw).hexdigest(),
                     "correlation_id": struct.unpack_from(">i", raw, 8 if request else 4)[0],
                     "packets": sorted(set(owner[pos:pos + len(raw)]))}
            if request:
                entry["api_key"], entry["api_version"] = struct.unpack_from(">hh", raw, 4)
                entry["keys"] = [key.hex() for key in keys if key in raw]       # the records it carries
            frames.append(entry)
            pos += len(raw)
    return frames


def _write_pcap(path: Path, packets: list) -> None:
    from scapy.utils import RawPcapWriter

    writer = RawPcapWriter(str(path), linktype=1, sync=True)
    writer.write_header(None)                    # write_packet alone writes no file header
    for meta, data, _ in packets:
        writer.write_packet(data, sec=meta.sec, usec=meta.usec)
    writer.close()


def record_derived() -> None:
    source, info = record_source()
    packets = _packets(source)
    port = info["port"]
    frames = frame_map(packets, port, [bytes.fromhex(p["key"]) for p in info["produced"]])
    big = [f for f in frames if f["direction"] == "request" and f["api_key"] == 0 and len(f["packets"]) > 1]
    assert len(big) >= 2, "the large Produce requests should span several segments"

    # mid-stream: the capture starts with the second segment of the first large Produce request
    cut = big[0]["packets"][1]
    mid = [p for i, p in enumerate(packets) if i >= cut]
    _write_pcap(HERE / "midstream.pcap", mid)
    mid_frames = [dict(f, lost=min(f["packets"]) < cut, packets=[i - cut for i in f["packets"] if i >= cut])
                  for f in frames]
    _write_expected("midstream", {
        "capture": "midstream.pcap", "derived_from": "a clean recording (confluent-kafka producer, one message per "
        "request, to the librdkafka mock), its first packets removed", "port": port, "first_packet_kept": cut,
        "produced": info["produced"], "frames": mid_frames})

    # lossy: drop one segment of the second large request, a small request and a response (not the same
    # exchange); deliver the first large request's segments out of order; capture two segments twice
    # (retransmissions, one of them late). Not done: moving a segment after the ACK that covers it (kafkalab
    # takes an acknowledged hole as lost at once; see README.md)
    small_requests = [f for f in frames if f["direction"] == "request" and f["api_key"] == 0
                      and len(f["packets"]) == 1]
    responses = [f for f in frames if f["direction"] == "response" and len(f["packets"]) == 1]
    drop = {big[1]["packets"][0], small_requests[-3]["packets"][0], responses[-4]["packets"][0]}
    operations = [{"op": "drop", "packet": i} for i in sorted(drop)]
    order = [i for i in range(len(packets)) if i not in drop]

    def move_after(packet: int, anchor: int) -> None:
        order.remove(packet)
        order.insert(order.index(anchor) + 1, packet)
        operations.append({"op": "reorder", "packet": packet, "now_after": anchor})
    move_after(big[0]["packets"][0], big[0]["packets"][1])       # a large frame's segments out of order
    for f in (small_requests[4], big[0]):                        # retransmissions: the same segment again
        packet = f["packets"][-1]
        anchor = order[order.index(packet) + 2]
        order.insert(order.index(anchor) + 1, packet)
        operations.append({"op": "duplicate", "packet": packet, "again_after": anchor})
    _write_pcap(HERE / "lossy.pcap", [packets[i] for i in order])
    lossy_frames = [dict(f, lost=bool(set(f["packets"]) & drop)) for f in frames]
    _write_expected("lossy", {
        "capture": "lossy.pcap", "derived_from": "the same clean recording as midstream.pcap, with the packet "
        "operations below applied (indexes are 0-based positions in the clean recording)", "port": port,
        "operations": operations, "produced": info["produced"], "frames": lossy_frames})
    source.unlink()


# ---------------------------------------------------------------- output

def _shorten(records: list[dict]) -> list[dict]:
    """Large values as their length and SHA-256 (the JSON files stay small)."""
    out = []
    for record in records:
        value = record["value"]
        if value is not None and len(value) > 2048:
            data = bytes.fromhex(value)
            record = dict(record, value=None, value_length=len(data), value_sha256=hashlib.sha256(data).hexdigest())
        out.append(record)
    return out


def _write_expected(name: str, expected: dict) -> None:
    for key in ("produced", "consumed"):
        if key in expected:
            expected[key] = _shorten(expected[key])
    expected["versions"] = versions()
    expected["recorded"] = time.strftime("%Y-%m-%d", time.gmtime())
    path = HERE / f"{name}.json"
    path.write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    size = (HERE / expected["capture"]).stat().st_size
    print(f"{expected['capture']}: {size / 1024:.0f} KB, {path.name}", file=sys.stderr)
    if size > 300 * 1024:
        raise SystemExit(f"{expected['capture']} is over 300 KB")


ALL = [*ROUNDTRIPS, "admin", "derived"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=ALL, help="record only these (default: all)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("tcpdump on lo needs root")
    for name in args.only or ALL:
        if name in ROUNDTRIPS:
            record_roundtrip(name)
        elif name == "admin":
            record_admin()
        else:
            record_derived()


if __name__ == "__main__":
    main()
