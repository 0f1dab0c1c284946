"""The ``kafkalab`` command line.

    kafkalab demo                          the main job: broker, real clients, pcap, decode, summary
    kafkalab dissect HEX | -r FILE         one frame (request by default) as an annotated tree
    kafkalab apis                          every API key with its version range
    kafkalab decode CAPTURE [-Y FILTER]    a capture's frames as a table, JSON Lines, CSV or Parquet
    kafkalab stats CAPTURE                 per-API counts, latencies, errors, topics, client versions
    kafkalab sniff -i IFACE [-w OUT.pcap]  live Kafka traffic from a network interface (Linux, root)
    kafkalab broker [--port 9092]          the broker in the foreground
    kafkalab users --bootstrap HOST:PORT   a running broker's SCRAM users: list, --set NAME:PASSWORD, --delete

Data goes to stdout, problems to stderr, each as one line that says what is wrong and what to do. Exit
codes: 0 ok; 1 a problem in the input's contents (a malformed frame, a damaged capture); 2 the command
cannot run as given (bad options, a missing file, a file that is not a capture, no such interface, no
permission to capture, a port in use); 130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kafkalab.protocol import DecodeError, ProtocolError, all_apis, decode_request, decode_response

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2


def _read_frame(args: argparse.Namespace) -> bytes:
    if args.read:
        return Path(args.read).read_bytes()
    if args.hex:
        text = "".join(args.hex).replace(" ", "").replace(":", "")
        return bytes.fromhex(text)
    if not sys.stdin.isatty():
        data = sys.stdin.buffer.read()
        try:
            return bytes.fromhex(data.decode("ascii").replace(" ", "").replace("\n", ""))
        except (UnicodeDecodeError, ValueError):
            return data
    raise ValueError("give a frame as hex, with -r FILE, or on standard input")


def _parse_response_spec(text: str) -> tuple[str, int]:
    api, _, version = text.rpartition(":")
    if not api or not version.isdigit():
        raise argparse.ArgumentTypeError("expected API:VERSION, e.g. Metadata:12")
    return api, int(version)


def cmd_dissect(args: argparse.Namespace) -> int:
    from kafkalab.dissect import format_tree, hexdump
    frame = _read_frame(args)
    if args.response:
        api, version = args.response
        message = decode_response(frame, api, version, annotate=True)
    else:
        message = decode_request(frame, annotate=True)
    if args.format == "json":
        out = message.to_dict()
        out["tree"] = message.tree.to_dict() if message.tree else None
        print(json.dumps(out, indent=1, default=str))
    else:
        print(format_tree(message.tree))
        if args.hex_dump:
            print()
            print(hexdump(frame))
    return EXIT_INPUT if any(d.startswith("malformed") for d in message.diagnostics) else EXIT_OK


def cmd_apis(args: argparse.Namespace) -> int:
    for api in all_apis():
        low, high = api.request.versions
        flexible = api.request.flexible
        flex = f"flexible from v{flexible}" if flexible is not None else "classic only"
        print(f"{api.api_key:>3}  {api.name:<32} v{low}-v{high}  {flex}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from kafkalab.demo import run_demo
    return run_demo(sys.stdout, sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafkalab", description="A lab for the Apache Kafka wire protocol.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="the main job: the broker, real clients' traffic written as a pcap, "
                                       "decoded and summarised",
                          description="Start kafkalab's broker, have confluent-kafka and kafka-python produce "
                                      "and consume through it, write its frame journal as a pcap, decode that "
                                      "with the capture reader and print per-API counts and latencies, records "
                                      "per topic and codec, and one Produce request as an annotated tree.")
    demo.set_defaults(func=cmd_demo)
    dissect = sub.add_parser("dissect", help="decode one frame into an annotated field tree")
    dissect.add_argument("hex", nargs="*", help="the frame as hex, including its 4-byte size prefix")
    dissect.add_argument("-r", "--read", metavar="FILE", help="read the raw frame from FILE")
    dissect.add_argument("--response", metavar="API:VERSION", type=_parse_response_spec,
                         help="decode a response to a request of API at VERSION")
    dissect.add_argument("-x", "--hex-dump", action="store_true", help="also print a hex dump")
    dissect.add_argument("-T", "--format", choices=("text", "json"), default="text")
    dissect.set_defaults(func=cmd_dissect)
    apis = sub.add_parser("apis", help="list every API key and version range the codec knows")
    apis.set_defaults(func=cmd_apis)
    from kafkalab.broker.cli import add_parser as add_broker_parser
    from kafkalab.capture.cli import add_parsers as add_capture_parsers
    add_broker_parser(sub)
    add_capture_parsers(sub)
    from kafkalab.capture.cli import _port
    from kafkalab.spark.cli import add_parser as add_spark_parser
    add_spark_parser(sub, _port)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else EXIT_OK
    try:
        return args.func(args)
    except FileNotFoundError as exc:
        print(f"kafkalab: no such file: {exc.filename} (check the path)", file=sys.stderr)
        return EXIT_USAGE
    except (DecodeError, ProtocolError, ValueError, OSError) as exc:
        print(f"kafkalab: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. piped into head: not an error worth a traceback
        sys.stderr.close()
        return EXIT_OK
