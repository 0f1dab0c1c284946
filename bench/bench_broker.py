"""Produce and consume throughput of the kafkalab broker with librdkafka (confluent-kafka) as the client.

    python3 bench/bench_broker.py [--records 500000] [--size 100] [--no-journal]

Produce: 100-byte records, linger.ms=5, batch.size 1 MB, acks=1, no compression, one partition. Consume:
the same records read back by an assigned consumer. Prints records/s, MB/s and the broker process's CPU time.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import confluent_kafka as ck  # noqa: E402

from kafkalab.broker import Broker  # noqa: E402


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def produce(bootstrap: str, count: int, size: int) -> tuple[float, float]:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                            "queue.buffering.max.messages": 2_000_000, "acks": 1, "enable.idempotence": False})
    value = b"x" * size
    start, c0 = time.perf_counter(), cpu()
    for i in range(count):
        while True:
            try:
                producer.produce("bench", value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.001)
    assert producer.flush(120) == 0
    return time.perf_counter() - start, cpu() - c0


def consume(bootstrap: str, count: int) -> tuple[float, float]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                            "fetch.max.bytes": 50_000_000, "max.partition.fetch.bytes": 10_000_000,
                            "queued.min.messages": 1_000_000, "fetch.queue.backoff.ms": 10})
    consumer.assign([ck.TopicPartition("bench", 0, ck.OFFSET_BEGINNING)])
    got, start, c0 = 0, time.perf_counter(), cpu()
    while not got:                      # startup (coordinator, offsets) is not throughput
        msg = consumer.poll(1.0)
        got = msg is not None and msg.error() is None
    start, c0 = time.perf_counter(), cpu()
    while got < count:
        for msg in consumer.consume(10_000, 1.0):
            if msg.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed, cpu() - c0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--journal-size", type=int, default=10_000)
    args = parser.parse_args()
    megabytes = args.records * args.size / 1e6
    with Broker(topics={"bench": 1}, journal_size=args.journal_size) as broker:
        elapsed, used = produce(broker.bootstrap_servers, args.records, args.size)
        print(f"produce: {args.records / elapsed:>10,.0f} records/s  {megabytes / elapsed:7.1f} MB/s  "
              f"({args.records:,} x {args.size} B in {elapsed:.2f} s, process CPU {used:.2f} s)")
        elapsed, used = consume(broker.bootstrap_servers, args.records)
        print(f"consume: {args.records / elapsed:>10,.0f} records/s  {megabytes / elapsed:7.1f} MB/s  "
              f"({elapsed:.2f} s, process CPU {used:.2f} s)")
        print(f"journal: {len(broker.journal_ring)} frames kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
