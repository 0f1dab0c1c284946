"""``kafkalab decode`` and ``kafkalab stats`` (through kafkalab.capture.cli.main, the same parsers the main
command line gets): formats, options, exit codes, NO_COLOR. Expected values come from the golden manifest
(what the clients wrote), not from kafkalab's own output."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkalab.capture import read_capture
from kafkalab.capture.cli import main
from kafkalab.capture.writers import Painter, use_color
from kafkalab.dissect.frame import FRAME_COLUMNS
from kafkalab.dissect.frames_table import frames_schema

from tests.capture.builders import pcap_bytes, write_golden_pcap


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "golden.pcap"
    conversations = write_golden_pcap(path)
    entries = [entry for _, _, items in conversations for entry, _ in items]
    return path, entries


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_lists_every_frame(golden, capsys):
    path, entries = golden
    code, out, err = run(capsys, "decode", path)
    assert code == 0 and not err
    lines = out.splitlines()
    assert len(lines) == len(entries)
    assert lines[0].split()[0] == "1" and "→" in lines[0]
    assert "\033[" not in out                           # not a terminal: no colour


def test_jsonl_follows_the_data_model(golden, capsys):
    path, entries = golden
    code, out, _ = run(capsys, "decode", path, "-T", "jsonl")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == len(entries)
    for record in records:
        assert list(record)[:-1] == ["ts" if c == "time" else c for c in FRAME_COLUMNS] and "body" in record
        assert isinstance(record["ts"], float)
    requests = [r for r in records if r["kind"] == "request"]
    wanted = [e for e in entries if e["direction"] == "request"]
    assert [(r["api_key"], r["api_version"], r["correlation_id"], r["client_id"]) for r in requests] == \
        [(e["api_key"], e["api_version"], e["correlation_id"], e["client_id"]) for e in wanted]
    produce = [r for r in requests if r["api_key"] == 0 and r["body"]["topic_data"]]
    assert produce
    for r in produce:
        for topic in r["body"]["topic_data"]:
            for part in topic["partition_data"]:
                for batch in part["records"]:
                    assert {"base_offset", "magic", "crc", "records"} <= set(batch)
                    for rec in batch["records"]:
                        assert {"offset_delta", "timestamp_delta", "key", "value", "headers"} <= set(rec)
                        assert rec["value"] is None or isinstance(rec["value"], str)
                        bytes.fromhex(rec["value"] or "")          # bytes as lowercase hex
    uuids = [v for r in records for v in _strings_named(r["body"], "topic_id")]
    for value in uuids:
        assert str(uuid.UUID(value)) == value
    assert all(k == k.lower() for r in records for k in _keys(r["body"]))       # snake_case keys


def _keys(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def _strings_named(value, name):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == name and isinstance(item, str):
                yield item
            yield from _strings_named(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from _strings_named(item, name)


def test_csv_and_parquet_hold_the_frames_table(golden, capsys, tmp_path):
    path, entries = golden
    code, out, _ = run(capsys, "decode", path, "-T", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(entries) and list(rows[0]) == FRAME_COLUMNS
    cap = read_capture(path)
    assert [json.loads(r["topics"]) for r in rows] == [f.topics for f in cap]
    parquet = tmp_path / "frames.parquet"
    code, out, _ = run(capsys, "decode", path, "-T", "parquet", "-o", parquet)
    assert code == 0 and out == ""
    table = pq.read_table(parquet)
    assert table.schema.equals(frames_schema())
    assert table.column("frame").to_pylist() == list(range(1, len(entries) + 1))
    assert table.column("topics").to_pylist() == [f.topics for f in cap]


def test_fields_print_the_columns_asked_for(golden, capsys):
    """-T fields -e ...: tab-separated, one line per frame, lists joined by commas (tshark's habit)."""
    path, entries = golden
    code, out, _ = run(capsys, "decode", path, "-T", "fields", "-e", "frame", "-e", "kind", "-e", "api_key",
                       "-e", "correlation_id", "-e", "client_id", "-e", "topics", "-e", "inferred")
    assert code == 0
    lines = [line.split("\t") for line in out.splitlines()]
    assert all(len(line) == 7 for line in lines) and len(lines) == len(entries)
    requests = [line for line in lines if line[1] == "request"]
    wanted = [e for e in entries if e["direction"] == "request"]
    assert [(int(r[2]), int(r[3]), r[4]) for r in requests] == \
        [(e["api_key"], e["correlation_id"], e["client_id"] or "") for e in wanted]
    assert [line[5] for line in lines] == [",".join(f.topics) for f in read_capture(path)]
    assert {line[6] for line in lines} <= {"true", "false"}
    code, out, _ = run(capsys, "decode", path, "-T", "csv", "-e", "api_name", "-e", "time", "-c", "2")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 2 and list(rows[0]) == ["api_name", "time"]
    code, out, _ = run(capsys, "decode", path, "-T", "jsonl", "-e", "frame", "-e", "body", "-c", "1")
    assert code == 0 and list(json.loads(out)) == ["frame", "body"]
    for argv, message in ((["-T", "fields"], "needs at least one -e"), (["-e", "frame"], "-e goes with"),
                          (["-T", "fields", "-e", "body"], "no such column: body"),
                          (["-T", "csv", "-e", "nope"], "no such column: nope")):
        code, out, err = run(capsys, "decode", path, *argv)
        assert code == 2 and out == "" and message in err, (argv, err)


def test_count_filter_verbose_and_hex(golden, capsys):
    path, _ = golden
    code, out, _ = run(capsys, "decode", path, "-c", "3")
    assert code == 0 and len(out.splitlines()) == 3
    code, out, _ = run(capsys, "decode", path, "-T", "jsonl", "-Y", 'api_name == "Produce" and kind == "request"')
    assert code == 0 and out
    assert {json.loads(line)["api_name"] for line in out.splitlines()} == {"Produce"}
    code, out, _ = run(capsys, "decode", path, "-V", "-x", "-c", "1")
    assert code == 0
    assert out.startswith("Frame 1: stream 0") and "header" in out and "0000  " in out


def test_exit_codes_and_messages(golden, capsys, tmp_path):
    path, _ = golden
    missing = tmp_path / "missing.pcap"
    code, out, err = run(capsys, "decode", missing)
    assert code == 2 and "no such capture file" in err and "Traceback" not in err
    garbage = tmp_path / "garbage.pcap"
    garbage.write_bytes(b"this is not a capture file at all")
    code, out, err = run(capsys, "decode", garbage)
    assert (code, out) == (2, "") and "not a pcap or pcapng file" in err
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    assert run(capsys, "stats", empty)[0] == 2
    truncated = tmp_path / "truncated.pcap"
    truncated.write_bytes(path.read_bytes()[:-7])
    code, out, err = run(capsys, "decode", truncated, "-T", "jsonl")
    assert code == 0 and "warning: file truncated" in err and out
    code, _, err = run(capsys, "decode", path, "-Y", "api_name ==")
    assert code == 2 and "bad filter" in err and "position" in err
    assert run(capsys, "decode", path, "-T", "parquet")[0] == 2               # needs -o
    assert run(capsys, "decode", path, "-T", "xml")[0] == 2
    assert run(capsys, "decode", path, "-p", "notaport")[0] == 2
    assert run(capsys, "decode", path, "-T", "jsonl", "-V")[0] == 2
    assert run(capsys, "decode")[0] == 2
    zero = tmp_path / "zero-length.pcap"
    zero.write_bytes(pcap_bytes([(1.0, b""), (2.0, b"\x00" * 3)]))
    code, out, err = run(capsys, "decode", zero)
    assert (code, out) == (0, "")


def test_stats_counts_apis_errors_topics_and_clients(golden, capsys):
    path, entries = golden
    code, out, _ = run(capsys, "stats", path, "-T", "json")
    assert code == 0
    report = json.loads(out)
    requests = [e for e in entries if e["direction"] == "request"]
    assert report["capture"]["frames"] == len(entries)
    assert report["capture"]["requests"] == len(requests)
    by_api = {a["api"]: a for a in report["apis"]}
    for entry in requests:
        assert entry["api_version"] in by_api[entry["api_name"]]["versions"]
    counted = {name: a["requests"] for name, a in by_api.items() if a["requests"]}
    expected: dict[str, int] = {}
    for entry in requests:
        expected[entry["api_name"]] = expected.get(entry["api_name"], 0) + 1
    assert counted == expected
    clients = {c["client_id"] for c in report["clients"]}
    assert clients == {e["client_id"] for e in requests if e["client_id"] is not None}
    for api in report["apis"]:
        lat = api["latency_ms"]
        if lat["count"]:
            assert lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    code, text, _ = run(capsys, "stats", path)
    assert code == 0 and "Per API" in text and "Clients" in text


def test_no_color(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert use_color(Terminal())
    assert not use_color(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(Terminal())
    assert Painter(False)("x", "31") == "x" and Painter(True)("x", "31") == "\033[31mx\033[0m"


def test_module_entry_point_and_closed_pipe(tmp_path):
    """Piped into ``head``: the reader goes away early; no traceback, exit 0."""
    from kafkalab.pcap import TcpPcapWriter
    from kafkalab.protocol import encode_request, encode_response

    path = tmp_path / "many.pcap"
    with TcpPcapWriter(path) as writer:
        conn = writer.open_connection(("10.0.0.1", 40000), ("10.0.0.2", 9092), 1.0)
        for i in range(3000):
            body = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
            writer.send(conn, True, encode_request("Heartbeat", 3, body, correlation_id=i, client_id="c"), 1 + i / 1e3)
            writer.send(conn, False, encode_response("Heartbeat", 3, {"throttle_time_ms": 0, "error_code": 0},
                                                     correlation_id=i), 1 + i / 1e3)
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m kafkalab.capture.cli decode {path} "
                                         "| head -1"], capture_output=True, text=True)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


@pytest.mark.parametrize("capture", ["golden", "lossy.pcap", "midstream.pcap", "admin.pcap",
                                     "produce-consume-zstd.pcap"])
@pytest.mark.parametrize("argv", [[], ["-T", "fields", "-e", "frame", "-e", "time", "-e", "topics", "-e", "inferred"],
                                  ["-T", "csv"], ["-T", "jsonl"], ["-Y", "kind == \"response\"", "-c", "5", "-V"]])
def test_a_capture_read_whole_prints_what_streaming_prints(golden, capsys, monkeypatch, capture, argv):
    """decode and stats read a small capture file whole (rows of the bulk reader, no Frame objects) and
    stream anything else; both must print the same thing."""
    from kafkalab.capture import cli

    monkeypatch.setattr(cli, "SMALL_BYTES", 0)          # these captures are small: read them whole anyway
    if capture == "golden":
        path, ports = golden[0], []
    else:
        path = Path(__file__).resolve().parents[2] / "captures" / capture
        ports = ["-p", json.loads(path.with_suffix(".json").read_text())["port"]]
    assert cli.whole_capture(str(path), [int(p) for p in ports[1:]]) is not None     # irregular ones too
    whole = [run(capsys, "decode", path, *ports, *argv), run(capsys, "stats", path, *ports, "-T", "json")]
    monkeypatch.setattr(cli, "whole_capture", lambda path, ports: None)
    streamed = [run(capsys, "decode", path, *ports, *argv), run(capsys, "stats", path, *ports, "-T", "json")]
    assert whole == streamed and whole[0][0] == 0 and whole[0][1]


@pytest.mark.parametrize("capture", ["admin", "produce-consume-gzip"])
@pytest.mark.parametrize("argv", [[], ["-T", "fields", "-e", "frame", "-e", "topics"], ["-T", "jsonl"], ["-T", "csv"],
                                  ["-V", "-x", "-c", "4"], ["-Y", "correlation_id >= 0"]])
def test_decoding_a_small_capture_loads_neither_numpy_nor_pandas_nor_pyarrow(capture, argv):
    """Start-up is what a user waits for on a small capture: the text paths (every text format, a filter, field
    trees; frames with record batches or without) load no heavy library, in a process of their own."""
    path = Path(__file__).resolve().parents[2] / "captures" / f"{capture}.pcap"
    probe = ("import runpy, sys; sys.argv = ['kafkalab', 'decode', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('kafkalab', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(' '.join(m for m in ('numpy', 'pandas', 'pyarrow') if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, str(path), *argv], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout and done.stderr.strip() == ""
