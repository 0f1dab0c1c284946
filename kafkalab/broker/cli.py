"""``kafkalab broker``: run the broker in the foreground with logging until Ctrl-C or SIGTERM (either shuts
down cleanly, writing ``--write-pcap``)."""
from __future__ import annotations

import argparse
import logging
import signal
import threading

EXIT_OK = 0


def _topic(text: str) -> tuple[str, int | None]:
    name, _, count = text.rpartition(":") if ":" in text else (text, "", "")
    if count and not count.isdigit():
        raise argparse.ArgumentTypeError("expected NAME or NAME:PARTITIONS, e.g. orders:3")
    return name, int(count) if count else None


def cmd_broker(args: argparse.Namespace) -> int:
    from .runtime import Broker

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    broker = Broker(host=args.host, port=args.port, data_dir=args.data_dir, node_id=args.node_id,
                    topics=dict(args.topic or []), default_partitions=args.partitions)
    broker.start()
    print(f"kafkalab broker listening on {broker.bootstrap_servers} (Ctrl-C stops it)", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())      # `kill`, systemd, docker stop: a clean shutdown
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
        if args.write_pcap:
            count = broker.write_pcap(args.write_pcap)
            print(f"wrote {count} journaled frames to {args.write_pcap}", flush=True)
    return EXIT_OK


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("broker", help="run the in-process Kafka broker in the foreground")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9092, help="port to listen on (default 9092; 0 picks one)")
    parser.add_argument("--data-dir", metavar="DIR", help="keep partitions in segment files under DIR")
    parser.add_argument("--topic", metavar="NAME:PARTITIONS", type=_topic, action="append",
                        help="create a topic at start (repeatable)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of auto-created topics")
    parser.add_argument("--node-id", type=int, default=1)
    parser.add_argument("--write-pcap", metavar="FILE", help="on exit, write the frame journal as a pcap file")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.set_defaults(func=cmd_broker)
    return parser
