"""``kafkalab broker``: run the broker in the foreground with logging until Ctrl-C or SIGTERM (either shuts
down cleanly, writing ``--write-pcap``)."""
from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import threading

from .config import DEFAULT_MAX_REQUEST_SIZE
from .scram_cli import add_parser as add_scram_users_parser
from .scram_cli import parse_user

EXIT_OK, EXIT_USAGE = 0, 2


def _topic(text: str) -> tuple[str, int | None]:
    name, _, count = text.rpartition(":") if ":" in text else (text, "", "")
    if count and not count.isdigit():
        raise argparse.ArgumentTypeError("expected NAME or NAME:PARTITIONS, e.g. orders:3")
    return name, int(count) if count else None


def _release(text: str) -> str:
    from .controls.personas import release_name
    try:
        return release_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_broker(args: argparse.Namespace) -> int:
    import logging

    from .runtime import Broker

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        broker = Broker(host=args.host, port=args.port, data_dir=args.data_dir, node_id=args.node_id,
                        topics=dict(args.topic or []), default_partitions=args.partitions, nodes=args.nodes,
                        emulate=args.emulate, sasl_port=args.sasl_port,
                        ssl_port=args.ssl_port, sasl_ssl_port=args.sasl_ssl_port, tls_cert=args.tls_cert,
                        tls_key=args.tls_key, users=dict(args.user or []),
                        super_users=tuple(args.super_user or ()),
                        allow_everyone_if_no_acl_found=not args.deny_if_no_acl,
                        max_connections=args.max_connections, max_request_size=args.max_request_size,
                        connections_max_idle_ms=args.connections_max_idle_ms,
                        request_receive_timeout_ms=args.request_receive_timeout_ms)
    except ValueError as exc:
        print(f"kafkalab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        broker.start()
    except OSError as exc:
        print(f"kafkalab: {_listen_problem(exc, args.host, args.port)}", file=sys.stderr)
        return EXIT_USAGE
    print(f"kafkalab broker listening on {broker.bootstrap_servers} (Ctrl-C stops it)", flush=True)
    for protocol in ("SASL_PLAINTEXT", "SSL", "SASL_SSL"):
        if protocol in broker.config.listener_ports():
            sasl = " (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)" if protocol.startswith("SASL") else ""
            print(f"{protocol}{sasl} on {broker.listener(protocol)}", flush=True)
    if broker.config.ssl_port is not None or broker.config.sasl_ssl_port is not None:
        print(f"TLS clients trust the CA file {broker.ca_file}", flush=True)
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


def _listen_problem(exc: OSError, host: str, port: int) -> str:
    """What went wrong opening the listener, and what to do, in one line."""
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is already in use (another broker?); choose another with --port N, "
                f"or --port 0 for a free one")
    if exc.errno == errno.EACCES:
        return f"no permission to listen on port {port} (ports below 1024 need root); choose --port 9092"
    reason = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or str(exc)
    return f"cannot listen on {host}:{port}: {reason} (check --host: a name or address of this machine)"


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("broker", help="run kafkalab's Kafka broker in the foreground until Ctrl-C")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9092, help="port to listen on (default 9092; 0 picks one)")
    parser.add_argument("--data-dir", metavar="DIR", help="keep partitions in segment files under DIR")
    parser.add_argument("--topic", metavar="NAME:PARTITIONS", type=_topic, action="append",
                        help="create a topic at start (repeatable)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of auto-created topics")
    parser.add_argument("--sasl-port", type=int, metavar="PORT",
                        help="also listen for SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256/512) on PORT (0 picks one)")
    parser.add_argument("--user", metavar="NAME:PASSWORD", type=parse_user, action="append",
                        help="a SASL user (repeatable); only salted SCRAM credentials are kept")
    parser.add_argument("--ssl-port", type=int, metavar="PORT", help="also listen for SSL (TLS) on PORT")
    parser.add_argument("--sasl-ssl-port", type=int, metavar="PORT", help="also listen for SASL_SSL on PORT")
    parser.add_argument("--tls-cert", metavar="PEM", help="certificate for the TLS listeners (default: self-signed)")
    parser.add_argument("--tls-key", metavar="PEM", help="private key of --tls-cert (if not in the same file)")
    parser.add_argument("--super-user", metavar="PRINCIPAL", action="append",
                        help="a principal every ACL check allows, e.g. User:admin (repeatable)")
    parser.add_argument("--deny-if-no-acl", action="store_true",
                        help="refuse resources no ACL names (allow.everyone.if.no.acl.found=false)")
    parser.add_argument("--max-connections", type=int, default=4096, metavar="N",
                        help="close connections beyond N (default 4096)")
    parser.add_argument("--max-request-size", type=int, default=DEFAULT_MAX_REQUEST_SIZE, metavar="BYTES",
                        help="close a connection whose request announces more (socket.request.max.bytes; "
                             "default 100 MiB)")
    parser.add_argument("--connections-max-idle-ms", type=int, default=600_000, metavar="MS",
                        help="close connections silent this long (default 600000)")
    parser.add_argument("--request-receive-timeout-ms", type=int, default=30_000, metavar="MS",
                        help="close a connection whose request does not arrive whole within MS (slowloris; "
                             "default 30000)")
    parser.add_argument("--node-id", type=int, default=1)
    parser.add_argument("--nodes", type=int, default=1,
                        help="run a cluster of N nodes in one process (default 1); every node has every listener, "
                             "on consecutive ports from the listener's base: PORT..PORT+N-1, "
                             "SASL_PORT..SASL_PORT+N-1 and so on (space the bases N apart)")
    parser.add_argument("--emulate", metavar="RELEASE", type=_release,
                        help="advertise and enforce the API versions of a Kafka release, 0.10 to 4.3 (e.g. 2.8)")
    parser.add_argument("--write-pcap", metavar="FILE", help="on exit, write the frame journal as a pcap file")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.set_defaults(func=cmd_broker)
    add_scram_users_parser(subparsers)
    return parser
