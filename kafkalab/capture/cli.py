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
codes: 0 ok, 1 input problem (unreadable or broken capture, with a one-line reason), 2 usage (bad options or
filter), 130 interrupted. A capture file of up to 64 MB that the bulk reader takes is read whole, then
written from its columns (the fastest way, memory a few times the file's size); anything larger, compressed or
read from standard input streams: frames are written as they are decoded (a request once its response is in,
so latency columns are filled), in bounded memory whatever the capture's size. Both print the same.

``add_parsers(subparsers)`` adds the commands to the main parser; ``main(argv)`` runs them on their own.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections import Counter, defaultdict
from operator import attrgetter
from typing import Any, Callable, Iterable, TextIO

from kafkalab.dissect.filter import FilterError, compile_filter
from kafkalab.dissect.frame import FRAME_COLUMNS, Frame, frame_record
from kafkalab.pcap import CaptureError

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

    sniff = subparsers.add_parser("sniff", help="capture Kafka traffic live (needs scapy and capture rights)",
                                  description="Sniff an interface, decode Kafka frames live, optionally "
                                              "writing the packets to a pcap file.")
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
    if path != "-" and not os.path.exists(path):
        raise CaptureError(f"no such capture file: {path}")
    if os.path.isdir(path):
        raise CaptureError(f"{path} is a directory, not a capture file")


def _source(path: str):
    return sys.stdin.buffer if path == "-" else path


def use_color(stream: TextIO) -> bool:
    """ANSI colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Painter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled and code else text


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


WHOLE_BYTES = 64 << 20              # captures up to this size are read whole by decode and stats
WHOLE_BATCH = 20_000


def whole_capture(path: str, ports: list[int]):
    """The capture at ``path`` read whole by the bulk reader, or None: standard input, a file larger than
    ``WHOLE_BYTES`` (streamed instead, to keep memory bounded: a whole read holds every frame) or one the
    bulk reader leaves to the general pipeline (compressed, other link types, irregular traffic)."""
    if path == "-" or not os.path.isfile(path) or os.path.getsize(path) > WHOLE_BYTES:
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


class TableWriter:
    """One line per frame, like a packet list: number, relative time, endpoints, summary, latency."""

    def __init__(self, out: TextIO, *, verbose: bool = False, hex: bool = False) -> None:
        self.out = out
        self.verbose, self.hex = verbose, hex
        self.paint = Painter(use_color(out))
        self.start: float | None = None

    def write(self, frames: list[Frame]) -> None:
        from kafkalab.dissect import hexdump

        from .capture import format_frame

        out, paint = self.out, self.paint
        for frame in frames:
            if self.verbose:
                out.write(format_frame(frame, hex=self.hex) + "\n\n")
                continue
            if self.start is None:
                self.start = frame.ts
            latency = f"  [{frame.latency_ms:.3f} ms]" if frame.kind == "response" and frame.latency_ms is not None \
                else ""
            color = "31" if frame.error else "33" if frame.diagnostics else "2" if frame.kind == "response" else ""
            line = (f"{frame.frame:>7} {frame.ts - self.start:>11.6f} {frame.src:>21} → {frame.dst:<21} "
                    f"{frame.summary}{latency}")
            out.write(paint(line, color) + "\n")
            if self.hex:
                out.write(hexdump(frame.raw) + "\n\n")

    def close(self) -> None:
        pass


class JsonLinesWriter:
    """One JSON object per frame (:func:`~kafkalab.dissect.frame.frame_record`), or only the ``fields`` named."""

    def __init__(self, out: TextIO, fields: Iterable[str] = ()) -> None:
        self.out = out
        self.fields = tuple(fields)

    def write(self, frames: list[Frame]) -> None:
        dumps, fields = json.dumps, self.fields
        body = not fields or "body" in fields
        records = (frame_record(f, body=body) for f in frames)
        if fields:
            records = ({name: record[name] for name in fields} for record in records)
        self.out.write("".join(dumps(r, ensure_ascii=False, default=str) + "\n" for r in records))

    def close(self) -> None:
        pass


def _cells(columns: tuple[str, ...], join: Callable[[list], str]) -> Callable[[Frame], list]:
    """``frame -> its values for text output``: ``time`` in ISO 8601 (UTC), lists through ``join``, nulls
    empty, booleans as true/false; everything else as it is."""
    get = attrgetter(*columns) if len(columns) > 1 else (lambda frame, name=columns[0]: (getattr(frame, name),))
    time_at = columns.index("time") if "time" in columns else -1

    def cells(frame: Frame) -> list:
        row = list(get(frame))
        for i, value in enumerate(row):
            if value is None:
                row[i] = ""
            elif value.__class__ is list:
                row[i] = join(value)
            elif value.__class__ is bool:
                row[i] = "true" if value else "false"
        if time_at >= 0:
            row[time_at] = row[time_at].isoformat()
        return row
    return cells


def _json_list(values: list) -> str:
    return json.dumps(values, ensure_ascii=False)


def _comma_list(values: list) -> str:
    return ",".join(map(str, values))


class CsvWriter:
    """The frames table as CSV (all columns, or those named): lists as JSON arrays (see :func:`_cells`)."""

    def __init__(self, out: TextIO, columns: tuple[str, ...] = tuple(FRAME_COLUMNS)) -> None:
        self.writer = csv.writer(out)
        self.columns = columns
        self.cells = _cells(columns, _json_list)
        self.started = False

    def write(self, frames: list[Frame]) -> None:
        if not self.started:
            self.writer.writerow(self.columns)
            self.started = True
        self.writer.writerows(map(self.cells, frames))

    def close(self) -> None:
        if not self.started:                # an empty capture still gets its header
            self.write([])


class FieldsWriter:
    """``-T fields``: the named columns, tab-separated, one line per frame, no header, lists joined by commas
    (what ``tshark -T fields -e ...`` prints), so ``cut``, ``sort`` and ``awk`` work on it."""

    def __init__(self, out: TextIO, columns: tuple[str, ...]) -> None:
        self.out = out
        self.cells = _cells(columns, _comma_list)

    def write(self, frames: list[Frame]) -> None:
        cells = self.cells
        self.out.write("".join("\t".join(map(_field_text, cells(f))) + "\n" for f in frames))

    def close(self) -> None:
        pass


def _field_text(value) -> str:
    """A cell on one line: tabs and line breaks (in a client id, say) would break the columns."""
    text = value if value.__class__ is str else str(value)
    return text.replace("\t", "\\t").replace("\n", "\\n") if "\t" in text or "\n" in text else text


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


class CaptureStats:
    """Aggregates over frames, batch by batch (memory: one latency per exchange)."""

    def __init__(self) -> None:
        self.frames = self.requests = self.responses = 0
        self.first: float | None = None
        self.last: float | None = None
        self.streams: set[int] = set()
        self.apis: dict[str, dict[str, Any]] = {}
        self.errors: Counter = Counter()
        self.topic_frames: Counter = Counter()
        self.topic_records: Counter = Counter()
        self.clients: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        self.diagnostics: Counter = Counter()

    def _api(self, frame: Frame) -> dict[str, Any]:
        name = frame.api_name or "(undecoded)"
        entry = self.apis.get(name)
        if entry is None:
            entry = self.apis[name] = {"api_key": frame.api_key, "versions": set(), "requests": 0, "responses": 0,
                                       "unanswered": 0, "no_response_expected": 0, "errors": 0, "latencies": []}
        return entry

    def add(self, frames: Iterable[Frame]) -> None:
        for frame in frames:
            self.frames += 1
            self.first = frame.ts if self.first is None else min(self.first, frame.ts)
            self.last = frame.ts if self.last is None else max(self.last, frame.ts)
            self.streams.add(frame.stream)
            entry = self._api(frame)
            if frame.api_version >= 0:
                entry["versions"].add(frame.api_version)
            if frame.kind == "request":
                self.requests += 1
                entry["requests"] += 1
                if frame.response_frame is None:
                    if frame.api_key == 0 and (frame.body or {}).get("acks") == 0:
                        entry["no_response_expected"] += 1
                    else:
                        entry["unanswered"] += 1
                if frame.client_id is not None:
                    self.clients[frame.client_id][frame.api_name].add(frame.api_version)
            else:
                self.responses += 1
                entry["responses"] += 1
                if frame.latency_ms is not None:
                    entry["latencies"].append(frame.latency_ms)
                if frame.error_code:
                    entry["errors"] += 1
                    self.errors[(frame.api_name, frame.error or str(frame.error_code))] += 1
            for topic in frame.topics:
                self.topic_frames[topic] += 1
                if frame.record_count and len(frame.topics) == 1:
                    self.topic_records[topic] += frame.record_count
            for note in frame.diagnostics:
                self.diagnostics[_diagnostic_kind(note)] += 1

    def report(self, *, top: int = 10) -> dict[str, Any]:
        apis = []
        for name, entry in sorted(self.apis.items(), key=lambda item: (item[1]["api_key"], item[0])):
            latencies = sorted(entry["latencies"])
            apis.append({
                "api": name, "api_key": entry["api_key"], "versions": sorted(entry["versions"]),
                "requests": entry["requests"], "responses": entry["responses"], "unanswered": entry["unanswered"],
                "no_response_expected": entry["no_response_expected"], "errors": entry["errors"],
                "latency_ms": {"p50": percentile(latencies, 50), "p90": percentile(latencies, 90),
                               "p99": percentile(latencies, 99), "max": latencies[-1] if latencies else None,
                               "count": len(latencies)},
            })
        return {
            "capture": {"frames": self.frames, "requests": self.requests, "responses": self.responses,
                        "streams": len(self.streams), "first": self.first, "last": self.last,
                        "duration_s": (self.last - self.first) if self.first is not None else None},
            "apis": apis,
            "errors": [{"api": api, "error": error, "count": count}
                       for (api, error), count in self.errors.most_common()],
            "topics": [{"topic": topic, "frames": count, "records": self.topic_records.get(topic, 0)}
                       for topic, count in self.topic_frames.most_common(top)],
            "clients": [{"client_id": client, "apis": {api: sorted(versions) for api, versions in sorted(apis.items())}}
                        for client, apis in sorted(self.clients.items())],
            "diagnostics": [{"kind": kind, "frames": count} for kind, count in self.diagnostics.most_common()],
        }


def _diagnostic_kind(note: str) -> str:
    """A diagnostic's kind: its text up to the first detail (number, colon or parenthesis)."""
    words = []
    for word in note.split():
        if word[0].isdigit() or word.startswith("(") or word.startswith("v") and word[1:].isdigit():
            break
        words.append(word.rstrip(":;,"))
        if word.endswith(":") or len(words) == 5:
            break
    return " ".join(words) or note[:40]


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default) over sorted ``values``."""
    if not values:
        return None
    position = (len(values) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return round(values[low] + (values[high] - values[low]) * (position - low), 6)


def format_stats(report: dict[str, Any], paint: Painter) -> str:
    cap = report["capture"]
    lines = [paint(f"Capture {cap['file']}", "1"),
             f"  {cap['frames']:,} Kafka frames ({cap['requests']:,} requests, {cap['responses']:,} responses) "
             f"in {cap['streams']} TCP streams"
             + (f" over {cap['duration_s']:.3f} s" if cap["duration_s"] is not None else ""), ""]
    lines.append(paint("Per API", "1"))
    lines.append(f"  {'API':<28} {'versions':<12} {'requests':>9} {'responses':>9} {'unanswered':>10} "
                 f"{'errors':>7} {'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} {'max ms':>9}")
    for api in report["apis"]:
        lat = api["latency_ms"]
        versions = ",".join(map(str, api["versions"])) or "-"
        lines.append(f"  {api['api']:<28} {versions:<12} {api['requests']:>9,} {api['responses']:>9,} "
                     f"{api['unanswered']:>10,} {api['errors']:>7,} " +
                     " ".join(f"{v:>9.3f}" if v is not None else f"{'-':>9}"
                              for v in (lat["p50"], lat["p90"], lat["p99"], lat["max"])))
    if report["errors"]:
        lines += ["", paint("Errors", "1")]
        lines += [paint(f"  {e['api']:<28} {e['error']:<40} {e['count']:>9,}", "31") for e in report["errors"]]
    if report["topics"]:
        lines += ["", paint("Top topics", "1"), f"  {'topic':<40} {'frames':>9} {'records':>10}"]
        lines += [f"  {t['topic']:<40} {t['frames']:>9,} {t['records']:>10,}" for t in report["topics"]]
    if report["clients"]:
        lines += ["", paint("Clients (API versions requested)", "1")]
        for client in report["clients"]:
            versions = ", ".join(f"{api} v{','.join(map(str, v))}" for api, v in client["apis"].items())
            lines.append(f"  {client['client_id'] or '(empty client id)'}: {versions}")
    if report["diagnostics"]:
        lines += ["", paint("Diagnostics", "1")]
        lines += [paint(f"  {d['kind']:<50} {d['frames']:>9,} frames", "33") for d in report["diagnostics"]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- sniff

@_guarded
def cmd_sniff(args: argparse.Namespace) -> int:
    """kafkalab sniff: live capture with scapy, decoded as it arrives, optionally written to a pcap."""
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
        return EXIT_INPUT
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
