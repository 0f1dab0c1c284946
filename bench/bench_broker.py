"""Produce and consume throughput of the kafkalab broker, side by side with librdkafka's mock cluster.

    python3 bench/bench_broker.py [--records 1000000] [--size 100] [--servers kafkalab,mock] [--repeat 3]
                                  [--in-process] [--profile broker.prof] [--journal-size 10000]
                                  [--transactions 10000]

Each server runs in its own process (the mock through ctypes on the librdkafka that confluent-kafka bundles);
the client is librdkafka (confluent-kafka) in this process. First, unless ``--no-core``, the broker core alone:
librdkafka-shaped Produce and Fetch requests through the sans-IO connection, no sockets and no client. Produce: ``--records`` records of ``--size`` bytes,
linger.ms=5, batch.size 1 MB, acks=1, no compression, one partition. Consume: the same records read back by an
assigned consumer. Prints records/s, MB/s and the CPU seconds of the server process and of this (client)
process (in-process: of the broker's thread, and of the whole process including it) for each of ``--repeat`` rounds (a fresh server each), then the best round of each. ``--in-process`` runs the kafkalab broker on a thread of this process instead (the notebook setting:
client and broker share one interpreter). ``--profile`` writes cProfile stats of the broker's event-loop
thread (``python3 -m pstats broker.prof``). ``--transactions N`` produces with a transactional producer instead,
committing every N records (InitProducerId, AddPartitionsToTxn, EndTxn and a marker per N records).
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TOPIC = "bench"


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) of another process, from /proc (0.0 where there is no /proc)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- servers, each in a child process that prints its bootstrap address and lives until stdin closes ------

def serve_kafkalab(journal_size: int, profile: str | None) -> None:
    from kafkalab.broker import Broker

    broker = Broker(topics={TOPIC: 1}, journal_size=journal_size).start()
    profiler = _start_profiler(broker) if profile else None
    print(f"BOOTSTRAP {broker.bootstrap_servers}", flush=True)
    sys.stdin.read()
    if profiler is not None:
        broker._loop.call(profiler.disable)
        profiler.dump_stats(profile)
    broker.stop()


def _start_profiler(broker):
    import cProfile

    profiler = cProfile.Profile()
    broker._loop.call(profiler.enable)      # cProfile follows the thread that enables it: the event loop's
    return profiler


def serve_mock() -> None:
    import confluent_kafka

    libdir = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
    lib = ctypes.CDLL(sorted(glob.glob(os.path.join(libdir, "librdkafka*.so*")))[0])
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    lib.rd_kafka_conf_new.restype = vp
    lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, ctypes.c_size_t]
    lib.rd_kafka_new.restype, lib.rd_kafka_new.argtypes = vp, [ctypes.c_int, vp, cp, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype, lib.rd_kafka_mock_cluster_new.argtypes = vp, [vp, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype, lib.rd_kafka_mock_cluster_bootstraps.argtypes = cp, [vp]
    lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, ctypes.c_int, ctypes.c_int]
    error = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", error, 512)
    handle = lib.rd_kafka_new(1, conf, error, 512)            # a consumer handle just hosts the mock
    cluster = lib.rd_kafka_mock_cluster_new(handle, 1)
    lib.rd_kafka_mock_topic_create(cluster, TOPIC.encode(), 1, 1)
    print(f"BOOTSTRAP {lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()}", flush=True)
    sys.stdin.read()
    os._exit(0)           # librdkafka teardown of a mock is order-sensitive; the process is done anyway


class Server:
    """A server child process (or, in-process, a Broker on a thread of this one)."""

    def __init__(self, kind: str, args) -> None:
        self.kind, self.pid, self.proc, self.broker = kind, None, None, None
        if kind == "kafkalab" and args.in_process:
            from kafkalab.broker import Broker
            self.broker = Broker(topics={TOPIC: 1}, journal_size=args.journal_size).start()
            self.profiler = _start_profiler(self.broker) if args.profile else None
            self.bootstrap, self.profile = self.broker.bootstrap_servers, args.profile
            return
        command = [sys.executable, os.path.abspath(__file__), "--serve", kind, "--journal-size", str(args.journal_size)]
        if args.profile and kind == "kafkalab":
            command += ["--profile", args.profile]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        line = self.proc.stdout.readline()
        if not line.startswith("BOOTSTRAP "):
            raise RuntimeError(f"{kind} server said {line!r}")
        self.bootstrap, self.pid = line.split()[1], self.proc.pid

    def cpu(self) -> float:
        """CPU seconds of the server: its process, or in-process the broker's event-loop thread."""
        if self.broker is not None:
            return self.broker._loop.call(time.thread_time)
        return process_cpu(self.pid)

    def stop(self) -> None:
        if self.broker is not None:
            if self.profiler is not None:
                self.broker._loop.call(self.profiler.disable)
                self.profiler.dump_stats(self.profile)
            self.broker.stop()
            return
        self.proc.stdin.close()
        self.proc.wait(30)


# --- the broker core alone: no sockets, no client -----------------------------------------------------

def core(count: int, size: int) -> None:
    """Produce and Fetch requests shaped like librdkafka's (1 MB batches) through the sans-IO connection: the
    broker's own cost per record, free of client speed, scheduling and the GIL."""
    from kafkalab.broker.config import BrokerConfig
    from kafkalab.broker.dispatch import Connection
    from kafkalab.broker.handlers import REGISTRY
    from kafkalab.broker.journal import Journal
    from kafkalab.broker.state import BrokerState
    from kafkalab.protocol import encode_request
    from kafkalab.protocol.records import build_batch, encode_records

    state = BrokerState(BrokerConfig())
    state.create_topic(TOPIC, 1)
    conn = Connection(state, REGISTRY, Journal(), stream=0, src="127.0.0.1:1", dst="127.0.0.1:2")
    per_batch = max(1, 1_000_000 // (size + 10))
    batch = encode_records([build_batch([(None, b"x" * size)] * per_batch, base_timestamp=1)])
    requests = [encode_request("Produce", 9, {"acks": 1, "timeout_ms": 5000, "topic_data": [{"name": TOPIC,
                "partition_data": [{"index": 0, "records": batch}]}]}, correlation_id=i, client_id="core")
                for i in range(max(1, count // per_batch))]
    start, cpu0 = time.perf_counter(), time.process_time()
    for frame in requests:
        conn.handle(frame, 0.0, 0)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu0
    records = len(requests) * per_batch
    print(f"core      produce {records / elapsed:>12,.0f} records/s {records * size / elapsed / 1e6:8.1f} MB/s   "
          f"{elapsed:6.2f} s   CPU {cpu:5.2f} s   ({len(requests)} requests of {len(batch):,} B)")
    fetches, offset, served = 0, 0, 0
    start = time.perf_counter()
    while offset < records:
        fetch = encode_request("Fetch", 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1,
                               "max_bytes": 50_000_000, "isolation_level": 0, "topics": [{"topic": TOPIC,
                               "partitions": [{"partition": 0, "fetch_offset": offset,
                                               "partition_max_bytes": 10_000_000}]}]}, correlation_id=0)
        answer = conn.handle(fetch, 0.0, 0)
        served += len(answer)
        fetches += 1
        offset += (len(answer) // len(batch)) * per_batch or per_batch
    elapsed = time.perf_counter() - start
    print(f"core      fetch   {records / elapsed:>12,.0f} records/s {served / elapsed / 1e6:8.1f} MB/s   "
          f"{elapsed:6.2f} s   ({fetches} responses of ~{served // fetches:,} B)")


# --- the client side ------------------------------------------------------------------------------------

def produce(server: Server, count: int, size: int, per_txn: int = 0) -> tuple[float, float, float]:
    import confluent_kafka as ck

    config = {"bootstrap.servers": server.bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
              "queue.buffering.max.messages": 2_000_000, "acks": 1, "enable.idempotence": False}
    if per_txn:
        config.update({"transactional.id": "bench", "acks": "all", "enable.idempotence": True})
    producer = ck.Producer(config)
    producer.list_topics(TOPIC, timeout=10)                 # connection and metadata are not throughput
    if per_txn:
        producer.init_transactions(30)
    value = b"x" * size
    start, mine, theirs = time.perf_counter(), own_cpu(), server.cpu()
    send = producer.produce
    for i in range(count):
        if per_txn and i % per_txn == 0:
            if i:
                producer.commit_transaction(120)
            producer.begin_transaction()
        try:
            send(TOPIC, value=value, partition=0)
        except BufferError:
            producer.poll(0.001)
            send(TOPIC, value=value, partition=0)
    if per_txn:
        producer.commit_transaction(120)
    assert producer.flush(120) == 0
    return time.perf_counter() - start, server.cpu() - theirs, own_cpu() - mine


def consume(server: Server, count: int) -> tuple[int, float, float, float]:
    """Read ``count`` records from the partition's earliest offset: (records read, seconds, server CPU, client
    CPU). librdkafka's mock keeps only the newest ~5 MB of a partition: against it the consumer seeks back to
    the earliest offset shortly before the end (before its fetch queue runs dry) until ``count`` were read."""
    import confluent_kafka as ck

    consumer = ck.Consumer({"bootstrap.servers": server.bootstrap, "group.id": "bench", "enable.auto.commit": False,
                            "fetch.max.bytes": 50_000_000, "max.partition.fetch.bytes": 10_000_000,
                            "queued.min.messages": 1_000_000, "fetch.wait.max.ms": 100})
    low, high = consumer.get_watermark_offsets(ck.TopicPartition(TOPIC, 0), timeout=10)
    rewind_at = high if high - low >= count else high - 20_000
    consumer.assign([ck.TopicPartition(TOPIC, 0, low)])
    got = 0
    while not got:                      # startup (connection, offsets) is not throughput
        msg = consumer.poll(1.0)
        got = int(msg is not None and msg.error() is None)
    start, mine, theirs = time.perf_counter(), own_cpu(), server.cpu()
    while got < count:
        for msg in consumer.consume(min(10_000, count - got), 1.0):
            if msg.error() is None:
                got += 1
                if msg.offset() == rewind_at:
                    consumer.seek(ck.TopicPartition(TOPIC, 0, low))
    elapsed = time.perf_counter() - start
    used = server.cpu() - theirs, own_cpu() - mine
    consumer.close()
    return got, elapsed, *used


def report(name: str, what: str, count: int, size: int, elapsed: float, server_cpu: float, client_cpu: float) -> float:
    rate = count / elapsed
    print(f"{name:9} {what:8} {rate:>12,.0f} records/s {count * size / elapsed / 1e6:8.1f} MB/s   "
          f"{elapsed:6.2f} s   server CPU {server_cpu:5.2f} s   client CPU {client_cpu:5.2f} s", flush=True)
    return rate


def _first(result: tuple, size: int) -> tuple:
    count, *rest = result
    return (count, size, *rest)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--servers", default="kafkalab,mock", help="comma-separated: kafkalab, mock")
    parser.add_argument("--journal-size", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="rounds per server (the best is summarised)")
    parser.add_argument("--in-process", action="store_true", help="run the kafkalab broker on a thread here")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the kafkalab broker's event-loop thread")
    parser.add_argument("--no-core", action="store_true", help="skip the socket-free broker core measurement")
    parser.add_argument("--transactions", type=int, default=0, metavar="N",
                        help="produce transactionally, committing every N records")
    parser.add_argument("--serve", choices=("kafkalab", "mock"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "kafkalab":
        serve_kafkalab(args.journal_size, args.profile)
        return 0
    if args.serve == "mock":
        serve_mock()
        return 0
    print(f"{args.records:,} records of {args.size} B, librdkafka {__import__('confluent_kafka').libversion()[0]} "
          f"client, {os.cpu_count()} CPUs")
    if not args.no_core:
        core(args.records, args.size)
    rates: dict[tuple[str, str], float] = {}
    for round_ in range(args.repeat):
        for kind in args.servers.split(","):
            server = Server(kind, args)
            try:
                rate = report(kind, "produce", args.records, args.size, *produce(server, args.records, args.size,
                                                                            args.transactions))
                rates[kind, "produce"] = max(rate, rates.get((kind, "produce"), 0))
                rate = report(kind, "consume", *_first(consume(server, args.records), args.size))
                rates[kind, "consume"] = max(rate, rates.get((kind, "consume"), 0))
            finally:
                server.stop()
    print(f"best of {args.repeat}: " + ", ".join(f"{kind} {what} {rate:,.0f}/s" for (kind, what), rate in rates.items()))
    if ("kafkalab", "produce") in rates and ("mock", "produce") in rates:
        print(f"kafkalab/mock: produce {rates['kafkalab', 'produce'] / rates['mock', 'produce']:.2f}, "
              f"consume {rates['kafkalab', 'consume'] / rates['mock', 'consume']:.2f}")
    if args.profile and os.path.exists(args.profile):
        import pstats
        print(f"\nbroker event-loop thread, last round ({args.profile}), by own time:")
        pstats.Stats(args.profile, stream=sys.stdout).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
