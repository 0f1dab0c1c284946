"""The capture commands of the ``kafkalab`` command line: ``decode``, ``stats`` and ``sniff``.

    kafkalab decode CAPTURE [-p PORT]... [-T table|fields|jsonl|csv|parquet] [-e COLUMN]... [-o OUT] [-V] [-x]
                    [-c N] [-Y FILTER]
    kafkalab stats  CAPTURE [-p PORT]... [-Y FILTER] [-T text|json] [--top N]
    kafkalab sniff  -i IFACE [-p PORT]... [-w OUT.pcap] [-c N] [-a SECONDS] [-T table|jsonl] [-Y FILTER] [-q]

Options follow tshark's habits: ``-T`` output format (``-T fields -e api_name -e latency_ms``: tab-separated
columns, lists joined by commas, as ``tshark -T fields`` prints them), ``-e`` the columns to print (also with
``csv`` and ``jsonl``), ``-V`` field tree, ``-x`` hex dump, ``-c`` count,
``-Y`` display filter (kafkalab's own language, see :mod:`kafkalab.dissect.filter`), ``-p`` more Kafka ports
(9092-9094 are always tried, and other ports are recognised from their traffic). Data goes to stdout (or
``-o``), warnings and errors to stderr; colour only on a terminal and never when ``NO_COLOR`` is set. Exit
codes: 0 ok, 1 input problem (a damaged capture, with a one-line reason), 2 the command cannot run as given
(bad options or filter, a missing file, a file that is not a capture, no such interface, no permission to
capture: one line saying what to do), 130 interrupted. A capture file of 1 MiB to 1 GiB that the engine takes is read
whole, then written from its columns (the fastest way); anything larger, smaller, compressed or read from
standard input streams (larger files through the same engine, window by window): frames are written as they are
decoded (a request once its response is in, so latency columns are filled), in bounded memory whatever the
capture's size. Both print the same.

``add_parsers(subparsers)`` adds the commands to the main parser; ``main(argv)`` runs them on their own.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable, Iterable, TextIO

from kafkalab.dissect.filter import FilterError, compile_filter
from kafkalab.dissect.frame import FRAME_COLUMNS
from kafkalab.pcap import CaptureError, NotACaptureFile

from .stats import CaptureStats, format_stats
from .writers import CsvWriter, FieldsWriter, JsonLinesWriter, Painter, TableWriter, use_color

EXIT_OK, EXIT_INPUT, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
FORMATS = ("table", "fields", "jsonl", "csv", "parquet")
JSON_ONLY_FIELDS = ("ts", "body")             # -e names that jsonl has besides the frame columns


class UsageError(Exception):
    """Bad options detected after parsing (exit 2)."""


# ---------------------------------------------------------------- parsers

def add_parsers(subparsers) -> None:
    """Add ``decode``, ``stats`` and ``sniff`` to an ``argparse`` sub-parser collection."""
    decode = subparsers.add_parser("decode", help="decode the Kafka frames of a pcap/pcapng capture",
                                   description="Decode every Kafka frame of a capture (pcap, pcapng, gzip).")
    decode.add_argument("capture", help="capture file (pcap or pcapng, optionally gzip-compressed)")
    _common_options(decode)
    decode.add_argument("-T", "--format", choices=FORMATS, default="table",
                        help="table (default: one line per frame), fields (with -e), jsonl, csv or parquet "
                             "(needs -o)")
    decode.add_argument("-e", "--field", action="append", default=[], metavar="COLUMN",
                        help="a frames-table column to print (repeat for more), with -T fields, csv or jsonl")
    decode.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of standard output")
    decode.add_argument("-V", "--verbose", action="store_true", help="print each frame's field tree (table)")
    decode.add_argument("-x", "--hex", action="store_true", help="print each frame's bytes as a hex dump (table)")
    decode.add_argument("-c", "--count", type=_count, metavar="N", help="stop after N frames (after -Y)")
    decode.set_defaults(func=cmd_decode)

    stats = subparsers.add_parser("stats", help="summarise a capture: APIs, latencies, errors, topics, clients",
                                  description="Statistics of the Kafka traffic in a capture.")
    stats.add_argument("capture", help="capture file (pcap or pcapng, optionally gzip-compressed)")
    _common_options(stats)
    stats.add_argument("-T", "--format", choices=("text", "json"), default="text")
    stats.add_argument("--top", type=_count, default=10, metavar="N", help="topics to list (default 10)")
    stats.set_defaults(func=cmd_stats)

    sniff = subparsers.add_parser("sniff", help="capture Kafka traffic live from a network interface (Linux; "
                                                "root or CAP_NET_RAW)",
                                  description="Sniff an interface, decode Kafka frames live, optionally "
                                              "writing the packets to a pcap file. Uses a Linux packet socket "
                                              "and a kernel port filter: no libpcap or tcpdump needed.")
    sniff.add_argument("-i", "--interface", required=True, metavar="IFACE", help="interface, e.g. lo or eth0")
    _common_options(sniff)
    sniff.add_argument("-w", "--write", metavar="OUT.pcap", help="also write the captured packets to a pcap file")
    sniff.add_argument("-T", "--format", choices=("table", "jsonl"), default="table")
    sniff.add_argument("-c", "--count", type=_count, metavar="N", help="stop after N Kafka frames")
    sniff.add_argument("-a", "--duration", type=float, metavar="SECONDS", help="stop after SECONDS")
    sniff.add_argument("-q", "--quiet", action="store_true", help="print nothing (with -w: just record)")
    sniff.set_defaults(func=cmd_sniff)


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-p", "--port", type=_port, action="append", default=[], metavar="PORT",
                        help="also treat PORT as Kafka (repeatable; 9092-9094 always are)")
    parser.add_argument("-Y", "--filter", metavar="FILTER",
                        help='display filter, e.g. \'api_name == "Produce" and latency_ms > 5\'')


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"port out of range: {port}")
    return port


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


# ---------------------------------------------------------------- running

def _guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Exit codes instead of tracebacks: input problems 1, usage 2, Ctrl-C 130, a closed pipe 0."""
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except FilterError as exc:
            _error(f"bad filter: {exc}")
            return EXIT_USAGE
        except UsageError as exc:
            _error(str(exc))
            return EXIT_USAGE
        except NotACaptureFile as exc:
            _error(f"{args.capture}: {exc}; give a pcap or pcapng capture (as tcpdump -w, Wireshark or "
                   f"kafkalab sniff -w write them)")
            return EXIT_USAGE
        except CaptureError as exc:
            _error(str(exc))
            return EXIT_INPUT
        except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            _error(f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc))
            return EXIT_INPUT
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED
        except BrokenPipeError:
            try:
                sys.stdout = open(os.devnull, "w")      # nothing more to write; stay quiet at exit
            except OSError:
                pass
            return EXIT_OK
        except OSError as exc:
            _error(f"input/output error: {exc}")
            return EXIT_INPUT
    run.__name__ = command.__name__
    run.__doc__ = command.__doc__
    return run


def _error(message: str) -> None:
    print(f"kafkalab: {message}", file=sys.stderr)


def _warn_all(notes: Iterable[str]) -> None:
    for note in notes:
        print(f"kafkalab: warning: {note}", file=sys.stderr)


def _check_capture(path: str) -> None:
    if path == "-" and sys.stdin is None:
        raise CaptureError("standard input is closed: there is no capture to read from '-'")
    if path != "-" and not os.path.exists(path):
        raise UsageError(f"no such capture file: {path} (check the path; - reads standard input)")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory; give a capture file in it")


def _source(path: str):
    return sys.stdin.buffer if path == "-" else path


# ---------------------------------------------------------------- decode

@_guarded
def cmd_decode(args: argparse.Namespace) -> int:
    """kafkalab decode: every frame of a capture as a table, JSON Lines, CSV or Parquet."""
    where = compile_filter(args.filter) if args.filter else None
    if args.format == "parquet" and not args.output:
        raise UsageError("-T parquet needs -o FILE (Parquet is a binary format)")
    if args.format != "table" and (args.verbose or args.hex):
        raise UsageError("-V and -x go with -T table")
    columns = _columns(args.field, args.format)
    _check_capture(args.capture)
    from .export import write_frames

    notes: list[str] = []
    if args.format == "parquet":
        write_frames(_source(args.capture), args.output, ports=args.port, where=where, limit=args.count,
                     diagnostics=notes, progress=_progress())
        _warn_all(notes)
        return EXIT_OK
    out, close = _open_output(args.output)
    try:
        batches = _frame_batches(args, where, args.count, notes)
        if args.format == "table":
            writer = TableWriter(out, verbose=args.verbose, hex=args.hex)
        elif args.format == "fields":
            writer = FieldsWriter(out, columns)
        else:
            writer = JsonLinesWriter(out, args.field) if args.format == "jsonl" else CsvWriter(out, columns)
        for batch in batches:
            writer.write(batch)
        writer.close()
        out.flush()
    finally:
        if close:
            out.close()
    _warn_all(notes)
    return EXIT_OK


def _frame_batches(args: argparse.Namespace, where, limit: int | None, notes: list[str]) -> Iterable[list]:
    """The frames to write, in batches: rows of the whole capture when it is a file small enough to read at
    once (:func:`whole_capture`), else Frames streamed with bounded memory (:func:`.export.iter_batches`).
    Both give the same values; the first is the faster."""
    capture = whole_capture(args.capture, args.port)
    if capture is None:
        from .export import iter_batches

        return iter_batches(_source(args.capture), args.port, where=where, limit=limit, diagnostics=notes,
                            progress=_progress())
    notes.extend(capture.diagnostics)
    rows = capture.rows()
    if where is not None:
        rows = [row for row in rows if where(row)]
    if limit is not None:
        rows = rows[:limit]
    return (rows[start:start + WHOLE_BATCH] for start in range(0, len(rows), WHOLE_BATCH))


WHOLE_BYTES = 1 << 30               # captures up to this size are read whole by decode and stats (a whole
#                                     read holds each frame's row, not its bytes: about 300 MB for 500 MB)
SMALL_BYTES = 1 << 20               # ... from this size: smaller ones stream (no numpy to load for them)
WHOLE_BATCH = 20_000


def whole_capture(path: str, ports: list[int]):
    """The capture at ``path`` read whole by the engine (see :mod:`.engine`), or None: standard input, a file
    larger than ``WHOLE_BYTES`` (streamed instead, to keep memory bounded: a whole read holds every frame's row)
    or one the engine leaves to the general pipeline (compressed, IPv6 or VLAN-tagged TCP). A small capture
    streams too: its start-up is what a user waits for, and the engine's numpy is not needed."""
    if path == "-" or not os.path.isfile(path) or not SMALL_BYTES <= os.path.getsize(path) <= WHOLE_BYTES:
        return None
    from .bulk import read_bulk
    from .capture import gc_paused

    with gc_paused():
        return read_bulk(path, ports)


def _columns(fields: list[str], format: str) -> tuple[str, ...]:
    """The columns ``-e`` asks for (all of them by default), checked against the format."""
    if fields and format in ("table", "parquet"):
        raise UsageError("-e goes with -T fields, csv or jsonl")
    if format == "fields" and not fields:
        raise UsageError("-T fields needs at least one -e COLUMN")
    known = (*FRAME_COLUMNS, *(JSON_ONLY_FIELDS if format == "jsonl" else ()))
    unknown = [name for name in fields if name not in known]
    if unknown:
        raise UsageError(f"no such column: {', '.join(unknown)} (columns: {', '.join(known)})")
    return tuple(fields) or tuple(FRAME_COLUMNS)


def _open_output(path: str | None) -> tuple[TextIO, bool]:
    if not path or path == "-":
        return sys.stdout, False
    return open(path, "w", encoding="utf-8", newline=""), True


def _progress():
    """A progress bar on stderr only when someone is watching it."""
    return None if sys.stderr.isatty() else False


# ---------------------------------------------------------------- stats

@_guarded
def cmd_stats(args: argparse.Namespace) -> int:
    """kafkalab stats: per-API counts and latencies, errors, top topics, per-client versions."""
    where = compile_filter(args.filter) if args.filter else None
    _check_capture(args.capture)
    notes: list[str] = []
    stats = CaptureStats()
    for batch in _frame_batches(args, where, None, notes):
        stats.add(batch)
    report = stats.report(top=args.top)
    report["capture"] = {"file": args.capture, **report["capture"], "file_diagnostics": notes}
    if args.format == "json":
        json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_stats(report, Painter(use_color(sys.stdout))))
    _warn_all(notes)
    return EXIT_OK


# ---------------------------------------------------------------- sniff

@_guarded
def cmd_sniff(args: argparse.Namespace) -> int:
    """kafkalab sniff: live capture from a packet socket, decoded as it arrives, optionally written to a pcap."""
    where = compile_filter(args.filter) if args.filter else None
    from .live import SniffError, sniff

    out = sys.stdout
    writer = None if args.quiet else (TableWriter(out) if args.format == "table" else JsonLinesWriter(out))
    shown = 0
    try:
        with sniff(iface=args.interface, ports=args.port or None, write=args.write) as live:
            print(f"kafkalab: capturing on {args.interface!r} ({live.bpf})", file=sys.stderr, flush=True)
            for frame in live.frames_iter(timeout=args.duration):
                if where is not None and not where(frame):
                    continue
                shown += 1
                if writer is not None:
                    writer.write([frame])
                    out.flush()
                if args.count is not None and shown >= args.count:
                    break
    except SniffError as exc:
        _error(str(exc))
        return EXIT_USAGE
    _warn_all(live.diagnostics)                 # e.g. packets the kernel dropped while the reader was behind
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Run the capture commands on their own: ``python -m kafkalab.capture.cli decode x.pcap``."""
    parser = argparse.ArgumentParser(prog="kafkalab", description="Kafka captures: decode, stats, sniff.")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code else EXIT_OK
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
