"""The teaching notebooks, executed top to bottom on a real kernel, with checks on what they computed.

Each notebook runs with nbclient in a fresh ``python3`` kernel (this interpreter, kafkalab importable from
the repository, ``MPLBACKEND=Agg``). After its last cell a check cell is appended (testbook-style): it prints
a JSON summary of values the notebook computed, and the test asserts on those. Expected values come from
the workload each notebook defines (records produced, offsets committed, bytes flipped), not from kafkalab.
"""
from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

import crc32c
import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
CAPTURES = REPO / "captures"
TIME_LIMIT = 60.0          # seconds per notebook, kernel start included
EXPECTED = ["01-wire-format-by-hand.ipynb", "02-record-batches.ipynb", "03-live-lab.ipynb",
            "04-offline-analysis.ipynb", "05-troubleshooting.ipynb", "06-spark-scale-analysis.ipynb",
            "07-security-and-failures.ipynb",
            "08-faults-and-personas.ipynb"]


def run_notebook(name: str, check: str, *, python_path: Path = REPO,
                 time_limit: float = TIME_LIMIT) -> tuple[dict, float, nbformat.NotebookNode]:
    """Execute notebook ``name`` plus a final cell printing JSON; return (that JSON, seconds, executed nb)."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import json as _json\nprint(_json.dumps(" + check + "))"))
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(python_path), os.environ.get("PYTHONPATH")])))
    client = NotebookClient(nb, timeout=time_limit, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.monotonic()
    client.execute(env=env)
    elapsed = time.monotonic() - start
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    stdout = "".join(o.text for o in nb.cells[-1].outputs if o.output_type == "stream" and o.name == "stdout")
    return json.loads(stdout.strip().splitlines()[-1]), elapsed, nb


# ---------------------------------------------------------------- the files themselves

def test_notebooks_are_committed_clean():
    """Output-free, valid, a python3 kernel, stable unique cell ids: what a reviewer diffs and Binder opens."""
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED
    for name in EXPECTED:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        nbformat.validate(nb)
        assert nb.metadata.kernelspec.name == "python3"
        ids = [cell.id for cell in nb.cells]
        assert len(ids) == len(set(ids)), name
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{name}: {cell.id} has outputs"
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert "sys.path" not in code, f"{name}: notebooks import the installed kafkalab"
        assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")


# ---------------------------------------------------------------- 1 · the wire format by hand

def test_01_wire_format_by_hand():
    values, elapsed, _ = run_notebook("01-wire-format-by-hand.ipynb", """{
        "frame_v0": frame_v0.hex(), "frame_v3": frame_v3.hex(),
        "error_code": response.body["error_code"], "api_keys": len(response.body["api_keys"]),
        "count_by_hand": count, "correlation_id": correlation_id,
        "apiversions_range": [r for r in response.body["api_keys"] if r["api_key"] == 18],
        "tagged_epoch": tagged.body["finalized_features_epoch"], "grew_by": len(with_tags) - len(answer),
        "unknown": {str(k): v.hex() for k, v in decoded_unknown.body["_unknown_tagged_fields"].items()},
        "journal": [[r.kind, int(r.api_version), int(r.correlation_id)] for r in broker.frames.itertuples()],
        "running": broker.running}""")
    client_id = b"by-hand"
    expected_v0 = struct.pack(">ihhih", 2 + 2 + 4 + 2 + len(client_id), 18, 0, 1, len(client_id)) + client_id
    assert values["frame_v0"] == expected_v0.hex()
    # v3: header v2 (client id as a classic string, then an empty tag section), two compact strings, tags
    body = bytes([len("kafkalab-notebook") + 1]) + b"kafkalab-notebook" + bytes([4]) + b"0.1" + b"\x00"
    header = struct.pack(">hhih", 18, 3, 2, len(client_id)) + client_id + b"\x00"
    assert values["frame_v3"] == (struct.pack(">i", len(header) + len(body)) + header + body).hex()
    assert values["error_code"] == 0 and values["correlation_id"] == 2
    assert values["count_by_hand"] == values["api_keys"] > 10
    assert values["apiversions_range"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]
    assert values["tagged_epoch"] == 7 and values["grew_by"] > 0
    assert values["unknown"] == {"42": b"abc".hex()}
    assert values["journal"] == [["request", 3, 2], ["response", 3, 2], ["request", 0, 1], ["response", 0, 1]]
    assert values["running"] is False
    assert elapsed < TIME_LIMIT


# ---------------------------------------------------------------- 2 · record batches

def test_02_record_batches():
    values, elapsed, _ = run_notebook("02-record-batches.ipynb", """{
        "data": data.hex(), "stored_crc": stored_crc,
        "codecs": {c: {"bits": int(r["attributes & 7"]), "bytes": int(r["bytes"]), "crc_ok": bool(r["crc_ok"]),
                       "round_trip": bool(r["round trip"])} for c, r in codecs.iterrows()},
        "bad": [bad.crc_ok, list(bad.diagnostics)], "crc_node": [crc_node.path, crc_node.diagnostics],
        "moved": [moved.crc_ok, [r.offset for r in moved.records]],
        "broken": [broken.crc_ok, list(broken.diagnostics)],
        "selected": list(explorer.selected_range),
        "selected_bytes": inflated.buffer[explorer.selected_range[1]:explorer.selected_range[2]].hex(),
        "first_key": records[0]["key"].hex()}""")
    data = bytes.fromhex(values["data"])
    assert values["stored_crc"] == crc32c.crc32c(data[21:]) == struct.unpack_from(">I", data, 17)[0]
    assert data[16] == 2                                                   # magic
    codecs = values["codecs"]
    assert {name: c["bits"] for name, c in codecs.items()} == {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3,
                                                               "zstd": 4}
    assert all(c["crc_ok"] and c["round_trip"] for c in codecs.values())
    assert all(c["bytes"] < codecs["none"]["bytes"] for name, c in codecs.items() if name != "none")
    crc_ok, diagnostics = values["bad"]
    assert crc_ok is False and diagnostics and diagnostics[0].startswith("CRC mismatch")
    assert values["crc_node"][0].endswith(".crc") and values["crc_node"][1] == diagnostics
    assert values["moved"] == [True, [5, 6]]                               # base_offset is outside the CRC
    assert values["broken"][0] is False and any("gzip" in d for d in values["broken"][1])
    assert values["selected"][0] == 1                                      # the inflated buffer
    assert values["selected_bytes"] == values["first_key"]
    assert elapsed < TIME_LIMIT


# ---------------------------------------------------------------- 3 · live lab

def test_03_live_lab():
    values, elapsed, _ = run_notebook("03-live-lab.ipynb", """{
        "runs": {name: summarize(name, frames) for name, frames in runs.items()},
        "consumed": len(consumed), "expected": expected,
        "ends": {str(tp.partition): o for tp, o in ends.items()},
        "lag": [[r.group, int(r.partition), int(r.high_watermark), int(r.committed), int(r.lag)]
                for r in lag.itertuples()],
        "zstd_diff": list(zstd_diff["path"]),
        "selected": list(explorer.selected_range),
        "versions": {str(k): {str(l): (None if pd.isna(v) else int(v)) for l, v in row.items()}
                     for k, row in versions.to_dict("index").items()},
        "explorer_rows": explorer.row_total, "following": explorer.following, "running": broker.running,
        "browsed": {"topics": browser.topics, "records": browser.records, "groups": browser.groups, "read": read}}""")
    runs = values["runs"]
    for acks, wire in (("all", -1), ("1", 1), ("0", 0)):
        run = runs[f"acks={acks}"]
        assert run["acks (in the request)"] == [wire] and run["records"] == 30
        assert run["responses"] == (0 if acks == "0" else run["Produce requests"])
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert runs[f"compression={codec}"]["codec (in the batches)"] == [codec]
    assert runs["compression=zstd"]["request bytes"] < runs["compression=none"]["request bytes"]
    assert runs["linger.ms=0"]["records"] == runs["linger.ms=100"]["records"] == 20
    assert runs["linger.ms=0"]["Produce requests"] > runs["linger.ms=100"]["Produce requests"]
    assert values["consumed"] == values["expected"] == 3 * 30 + 2 * 20 + 5 * 30
    # lag from the capture of the bytes = what the notebook committed: 10 behind each partition's end
    assert [(p, hw, committed, lag) for _, p, hw, committed, lag in values["lag"]] == [
        (p, values["ends"][str(p)], values["ends"][str(p)] - 10, 10) for p in range(3)]
    assert {group for group, *_ in values["lag"]} == {"lab"}
    assert any(p.endswith(".attributes") for p in values["zstd_diff"])
    assert any(p.endswith(".deflated") for p in values["zstd_diff"])
    assert values["selected"][0] == 1                                      # a key inside the inflated buffer
    assert values["versions"]["Produce"]["librdkafka"] >= 3 and values["versions"]["Fetch"]["kafka-python"] >= 4
    assert values["explorer_rows"] > 100 and values["following"] is False and values["running"] is False
    browsed = values["browsed"]             # the message browser: the log as written, the group as committed
    assert [t for t in browsed["topics"] if not t["internal"]] == [
        {"topic": "orders", "internal": False, "partitions": 2, "records": 20}]
    assert [t["topic"] for t in browsed["topics"] if t["internal"]] == ["__consumer_offsets"]   # the commit
    assert browsed["records"] and all(json.loads(r["value"]["text"])["order"] in range(20) for r in browsed["records"])
    assert browsed["records"][0]["headers"][0] == {"key": "source", "value": {"as": "text", "text": "web"}}
    (invoicing,) = browsed["groups"]
    assert invoicing["group_id"] == "invoicing" and invoicing["state"] == "Stable"
    assert sorted(a for m in invoicing["members"] for a in m["assignment"]) == ["orders-0", "orders-1"]
    assert sum(o["lag"] for o in invoicing["offsets"]) == 20 - browsed["read"]
    assert elapsed < TIME_LIMIT


# ---------------------------------------------------------------- 4 · offline analysis

def test_04_offline_analysis():
    values, elapsed, _ = run_notebook("04-offline-analysis.ipynb", """{
        "produced": {t: int(n) for t, n in cap.records[cap.records["kind"] == "request"].groupby("topic").size().items()},
        "headers": sorted({str(h) for h in cap.records[cap.records["topic"] == "orders"]["headers"]}),
        "codecs": sorted(set(cap.records[cap.records["kind"] == "request"]["codec"])),
        "errors": [[r.api_name, r.category, r.detail] for r in errors.itertuples()],
        "lag": [[r.group, int(r.partition), int(r.high_watermark), int(r.committed), int(r.lag)]
                for r in plots.consumer_lag(cap, latest=True).itertuples()],
        "plan": plan, "exported": exported,
        "tables": {n: len(getattr(cap, n)) for n in ("frames", "exchanges", "records", "connections")},
        "throughput": {t: int(n) for t, n in throughput.groupby("topic")["records"].sum().items()},
        "midstream": bool(cap.connections["midstream"].any()), "gaps": int(cap.connections["gaps"].sum()),
        "filtered": sorted(set(cap.filter('error != null')["api_name"])),
        "files": sorted(p.name for p in workdir.iterdir()),
        "shipped": None if real is None else {
            "lag": [[r.group, int(r.partition), int(r.high_watermark), int(r.committed), int(r.lag)]
                    for r in plots.consumer_lag(real, latest=True).itertuples()],
            "join_ms": float(plots.latency_stats(real).loc["JoinGroup", "max_ms"]),
            "diagram_streams": sorted({e.stream for e in plots.sequence_diagram(real, stream=join_stream).exchanges})}}""")
    plan = values["plan"]
    assert values["produced"] == {"orders": plan["orders"], "payments": plan["payments"]}
    assert values["throughput"] == values["produced"]
    assert values["headers"] == [str([{"key": "source", "value": b"web"}])]
    assert values["codecs"] == ["gzip", "lz4"]
    assert ["CreateTopics", "error", "TOPIC_ALREADY_EXISTS"] in values["errors"]
    assert values["filtered"] == ["CreateTopics"]
    per_partition = plan["orders"] // 3
    assert values["lag"] == [["billing", int(p), per_partition, committed, per_partition - committed]
                             for p, committed in plan["committed"].items()]
    assert values["exported"] == values["tables"]
    assert {"frames.parquet", "exchanges.parquet", "records.parquet", "connections.parquet",
            "offsets.parquet", "session.pcap"} <= set(values["files"])
    assert values["midstream"] is False and values["gaps"] == 0
    shipped = CAPTURES / "produce-consume-zstd.json"
    if shipped.exists():                   # the tcpdump recording: expected values from the clients' own reports
        recorded = json.loads(shipped.read_text())
        per_partition: dict[int, int] = {}
        for record in recorded["produced"]:
            per_partition[record["partition"]] = per_partition.get(record["partition"], 0) + 1
        assert len(recorded["consumed"]) == len(recorded["produced"])      # the group read (and committed) all
        assert [(p, hw, committed, lag) for _, p, hw, committed, lag in values["shipped"]["lag"]] == [
            (p, n, n, 0) for p, n in sorted(per_partition.items())]
        assert values["shipped"]["join_ms"] > 1000                         # the delayed first rebalance
        assert len(values["shipped"]["diagram_streams"]) == 1
    else:
        assert values["shipped"] is None
    assert elapsed < TIME_LIMIT


# ---------------------------------------------------------------- 5 · troubleshooting

def test_05_troubleshooting():
    values, elapsed, _ = run_notebook("05-troubleshooting.ipynb", """{
        "default_frames": len(cap_default), "same_with_port": bool(cap_mid.frames.equals(cap_default.frames)),
        "mid": [[r.kind, r.api_name, bool(r.inferred), list(r.diagnostics)] for r in cap_mid.frames.head(2).itertuples()],
        "midstream": bool(cap_mid.connections["midstream"].iloc[0]),
        "mid_requests": int(cap_mid.frames["kind"].eq("request").sum()),
        "lost": [int(cap_lost.connections["gaps"].iloc[0]), int(cap_lost.connections["gap_bytes"].iloc[0]),
                 len(second_metadata.raw)],
        "lost_inferred": [[r.api_name, int(r.correlation_id)] for r in cap_lost.frames.itertuples() if r.inferred],
        "fallback": [fallback.api_version, fallback.body["error_code"]], "retry": [retry_version, retry.body["error_code"]],
        "as_expected": [as_expected.api_version, as_expected.diagnostics],
        "corrupt": [partition_response["error_code"], partition_response["base_offset"]],
        "crc": [crc_node.path, crc_node.diagnostics, corrupt_request.diagnostics],
        "timeline": [[r.api_name, r.category, r.detail] for r in timeline.itertuples()],
        "real": {name: [[f.kind, f.api_name, bool(f.inferred), list(f.diagnostics)] for f in cap]
                 for name, cap in real_recordings.items()},
        "recorded_negotiation": None if not recorded.exists() else [
            [r.kind, int(r.api_version), int(r.correlation_id), None if pd.isna(r.error) else r.error]
            for r in recorded_negotiation.itertuples()],
        "running": broker.running,
        "txn": {"isolation": isolation.reset_index().fillna("").values.tolist(),
                "aborted": fetched["aborted_transactions"], "lso": fetched["last_stable_offset"],
                "batches": batches[["base_offset", "control", "content"]].values.tolist(),
                "states": coordinator_log["state"].tolist(), "running": txn_broker.running}}""")
    assert values["default_frames"] == 11 and values["same_with_port"]    # found without naming the port
    (kind, api, inferred, notes), (next_kind, _, _, next_notes) = values["mid"]
    assert (kind, api, inferred) == ("response", "Produce", True)
    assert any("request not captured" in note for note in notes), notes
    assert next_kind == "request" and any(note.startswith("resynchronised") for note in next_notes), next_notes
    assert values["midstream"] is True and values["mid_requests"] == 5      # produces 2-4, Metadata, ListOffsets
    gaps, gap_bytes, lost_size = values["lost"]
    assert gaps == 1 and gap_bytes == lost_size
    assert values["lost_inferred"] == [["Metadata", 7]]                   # the 7th call's answer
    assert values["fallback"] == [0, 35] and values["retry"] == [4, 0]
    assert values["as_expected"][0] == 0 and "KIP-511" in values["as_expected"][1][0]
    assert values["corrupt"] == [2, -1]                                    # CORRUPT_MESSAGE, nothing written
    path, crc_notes, frame_notes = values["crc"]
    assert path.endswith(".crc") and crc_notes[0].startswith("CRC mismatch") and frame_notes
    assert ["Produce", "error", "CORRUPT_MESSAGE"] in values["timeline"]
    assert values["running"] is False
    txn = values["txn"]                                                   # story 5: an aborted transaction
    assert txn["isolation"] == [[0, "pay-1", "pay-1"], [1, "pay-2", "pay-2"], [3, "refund-oops", ""],
                                [5, "pay-3", "pay-3"]]
    assert [a["first_offset"] for a in txn["aborted"]] == [3] and txn["lso"] == 7
    assert txn["batches"] == [[0, False, "pay-1, pay-2"], [2, True, "COMMIT"], [3, False, "refund-oops"],
                              [4, True, "ABORT"], [5, False, "pay-3"], [6, True, "COMMIT"]]
    assert txn["states"] == ["EMPTY"] + ["ONGOING", "PREPARE_COMMIT", "COMPLETE_COMMIT",
                                         "ONGOING", "PREPARE_ABORT", "COMPLETE_ABORT",
                                         "ONGOING", "PREPARE_COMMIT", "COMPLETE_COMMIT"]
    assert txn["running"] is False
    real = values["real"]
    if (CAPTURES / "midstream.pcap").exists():
        kind, _, inferred, notes = real["midstream"][0]
        assert kind == "response" and inferred and any("request not captured" in n for n in notes)
    if (CAPTURES / "lossy.pcap").exists():
        notes = [n for *_, frame_notes in real["lossy"] for n in frame_notes]
        assert any(n.startswith("gap before frame") for n in notes)
        assert any(inferred for _, _, inferred, _ in real["lossy"])
    if (CAPTURES / "produce-consume-none.pcap").exists():
        (k1, v1, c1, e1), (k2, v2, c2, _), (k3, v3, c3, _) = values["recorded_negotiation"][:3]
        assert (k1, v1, e1, k2, v2, c2) == ("request", 3, None, "response", 3, c1)
        assert values["recorded_negotiation"][1][3] == "UNSUPPORTED_VERSION"
        assert (k3, v3) == ("request", 0)
    assert elapsed < TIME_LIMIT



# ---------------------------------------------------------------- 6 · Spark-scale analysis

SPARK_TIME_LIMIT = 150.0   # a JVM start and a dozen Spark jobs: ~40 s on an idle 2-core machine, more under load
# every drawn text of the notebook's figures with its box, and the canvas (the figures are kept by name)
FIGURE_TEXTS = """{name: {"canvas": list(f.bbox.extents), "texts": [[t.get_text(), *t.get_window_extent(
    f.canvas.get_renderer()).extents] for t in f.findobj(__import__("matplotlib.text", fromlist=["Text"]).Text)
    if t.get_visible() and str(t.get_text()).strip()]}
    for name, f in [("clients", clients_fig), ("topics", topics_fig), ("latency", latency_fig),
                    ("errors", errors_fig), ("lag", lag_fig)] if f.canvas.draw() is None}"""


def test_06_spark_scale_analysis():
    pytest.importorskip("pyspark")
    values, elapsed, _ = run_notebook("06-spark-scale-analysis.ipynb", """{
        "paths": PATHS, "sizes": sizes, "problems": cap.diagnostics,
        "clients": top_clients.fillna({"client_id": ""}).values.tolist(),
        "topics": topic_requests[["topic", "requests"]].values.tolist(),
        "per_topic": per_topic[["topic", "direction", "records"]].values.tolist(),
        "latency": latency[["api_name", "answered", "max_ms"]].values.tolist(),
        "windows": sorted({str(w) for w in over_time["window"]}),
        "trouble": sorted({(s, w) for s, w in trouble[["source", "what"]].values.tolist()}),
        "lag": lag[["group", "topic", "partition", "high_watermark", "committed", "lag"]].values.tolist(),
        "sql": sql_per_topic[["kind", "partition", "records"]].values.tolist(),
        "figures": """ + FIGURE_TEXTS + "}", time_limit=SPARK_TIME_LIMIT)
    import kafkalab

    paths = [NOTEBOOKS / p for p in values["paths"]]
    engine = kafkalab.read_capture(paths)               # the single-process reader on the same files
    assert values["problems"] == []
    assert values["sizes"] == {name: len(getattr(engine, name)) for name in values["sizes"]}
    exchanges = engine.exchanges
    requests = exchanges.groupby("client_id").size()
    assert {c: n for c, n, *_ in values["clients"]} == {c: int(n) for c, n in requests.items()}
    assert [n for _, n, *_ in values["clients"]] == sorted(requests, reverse=True)
    # the clients' own reports: five recordings produced and consumed 24 records each; lossy.pcap's producer
    # sent 19, of which the requests not lost to dropped packets carry 17
    reports = [json.loads(p.with_suffix(".json").read_text()) for p in paths if p.stem.startswith("produce-consume")]
    assert len(reports) == 5
    lossy = json.loads((CAPTURES / "lossy.json").read_text())
    seen = sum(len(f["keys"]) for f in lossy["frames"] if f["direction"] == "request" and not f["lost"])
    produced = sum(len(r["produced"]) for r in reports) + seen
    assert sorted(values["per_topic"]) == [["orders", "fetched", sum(len(r["consumed"]) for r in reports)],
                                           ["orders", "produced", produced]]
    assert (seen, produced) == (17, 137)
    assert values["topics"][0] == ["orders", 72] and {"admin-a", "missing-topic"} <= {t for t, _ in values["topics"]}
    latency = {api: (n, ms) for api, n, ms in values["latency"]}
    assert latency["JoinGroup"][1] > 3000 and latency["Fetch"][1] > 500      # the waits the prose explains
    assert len(values["windows"]) >= 3                                          # three recording sessions
    trouble = set(map(tuple, values["trouble"]))
    assert {("error code", "TOPIC_ALREADY_EXISTS"), ("error code", "UNKNOWN_TOPIC_OR_PARTITION"),
            ("error code", "UNSUPPORTED_VERSION"), ("diagnostic", "gap before frame")} <= trouble
    # lag: each group committed every partition's end (12 records per partition in each recording)
    assert sorted(values["lag"]) == sorted([f"lab-group-{codec}", "orders", p, 12, 12, 0]
                                           for codec in ("gzip", "none", "snappy", "zstd") for p in (0, 1))
    assert sum(n for _, _, n in values["sql"]) == values["sizes"]["records"]
    for name, figure in values["figures"].items():
        x0, y0, x1, y1 = figure["canvas"]
        texts = [(t, box) for t, *box in figure["texts"]
                 if box[2] - box[0] > 1 and box[3] - box[1] > 1 and box[0] < x1 and box[2] > x0
                 and box[1] < y1 and box[3] > y0]
        assert texts, name
        for t, (a0, b0, a1, b1) in texts:
            assert x0 - 1 <= a0 and a1 <= x1 + 1 and y0 - 1 <= b0 and b1 <= y1 + 1, f"{name}: {t!r} is cut off"
        clashes = [(a, b) for i, (a, p) in enumerate(texts) for b, q in texts[i + 1:]
                   if p[0] < q[2] - 1 and q[0] < p[2] - 1 and p[1] < q[3] - 1 and q[1] < p[3] - 1]
        assert not clashes, f"{name}: overlapping labels {clashes[:5]}"
    assert elapsed < SPARK_TIME_LIMIT


def test_08_faults_and_personas():
    values, elapsed, _ = run_notebook("08-faults-and-personas.ipynb", """{
        "fired": [f.note for f in broker.faults.fired], "first": first.offset,
        "produce_errors": [int(e) for e in broker.frames.query("api_name == 'Produce' and kind == 'response'")
                           .error_code],
        "second": second.offset, "stored": held.response["responses"][0]["partition_responses"][0]["base_offset"],
        "notes": [d for ds in broker.frames.diagnostics for d in ds],
        "timeline": error_timeline(broker)[["api_name", "category", "detail"]].values.tolist(),
        "personas": personas.to_dict("records"),
        "acked": acked, "moved_to": list(moved_to),
        "cluster_errors": [int(e) for e in cf[(cf.api_name == "Produce") & (cf.kind == "response")].error_code],
        "deliveries": deliveries,
        "running": broker.running or cluster.running or queue.running}""")
    assert values["fired"] == ["fault injected: NOT_LEADER_OR_FOLLOWER"]          # story 1
    assert values["first"] == 0 and values["produce_errors"][:2] == [6, 0]      # refused once, then appended
    assert ["Produce", "diagnostic", "fault injected: NOT_LEADER_OR_FOLLOWER"] in values["timeline"]
    assert ["Produce", "error", "NOT_LEADER_OR_FOLLOWER"] in values["timeline"]
    assert (values["second"], values["stored"]) == (4242, 1)                    # story 2: the edited answer
    assert any(n.endswith("response edited") for n in values["notes"])
    personas = {row["persona"]: row for row in values["personas"]}              # story 3
    assert [row["kafka-python infers"] for row in values["personas"]] == list(personas)
    assert personas["0.10.0"]["librdkafka Produce"] == 2 and personas["2.8"]["librdkafka Produce"] == 9
    first_try, retry = personas["0.10.0"]["librdkafka ApiVersions"][:2]
    assert first_try > 0 and retry == 0                                         # KIP-511 fallback to v0
    assert values["acked"] == list(range(10)) and values["moved_to"][1] == 1    # story 4: nothing lost
    assert 6 in values["cluster_errors"] and values["cluster_errors"][-1] == 0
    assert [(d["member"], d["value"], d["delivery_count"]) for d in values["deliveries"]] == [   # story 5
        ("alice", "job-0", 1), ("alice", "job-1", 1), ("bob", "job-2", 1), ("bob", "job-3", 1),
        ("bob", "job-1", 2)]
    assert values["running"] is False
# ---------------------------------------------------------------- 7 · security and failures

def test_07_security_and_failures():
    values, elapsed, nb = run_notebook("07-security-and-failures.ipynb", """{
        "exchange": exchange, "refused": len(refused), "denial": denial, "throttles": throttles,
        "slow_seconds": slow_seconds, "users": broker.users, "tls_values": [v.decode() for v in tls_values],
        "recovery": [[r.api_name, r.kind, r.error if isinstance(r.error, str) else None]
                     for r in recovery.itertuples() if r.frame >= recovery[recovery.api_name == "Produce"].frame.min()],
        "recovered_offset": recovered.offset, "fault_state": list(broker.faults.table()["state"]),
        "negotiation": negotiation.astype(str).to_dict("records")}""")
    texts = [text for _, text in values["exchange"]]
    assert [kind for kind, _ in values["exchange"]] == ["request", "response", "request", "response"]
    assert texts[0].startswith("n,,n=alice,r=")
    client_nonce = texts[0].split("r=", 1)[1]
    assert texts[1].startswith("r=" + client_nonce) and ",s=" in texts[1] and texts[1].endswith(",i=4096")
    assert texts[2].startswith("c=biws,r=") and ",p=" in texts[2] and texts[3].startswith("v=")
    assert values["refused"] >= 1
    assert values["denial"] == {"alice": "delivered", "bob": "TOPIC_AUTHORIZATION_FAILED"}
    assert any(ms > 0 for ms in values["throttles"]) and values["slow_seconds"] >= 1.0
    assert values["users"] == {"alice": {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096},
                               "bob": {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 4096}}
    assert values["tls_values"] == ["sealed in transit"]
    # the injected fault: refused once, then the same batch acknowledged (after the 2 earlier records)
    assert [row for row in values["recovery"] if row[0] == "Produce"] == [
        ["Produce", "request", None], ["Produce", "response", "NOT_LEADER_OR_FOLLOWER"],
        ["Produce", "request", None], ["Produce", "response", None]]
    assert values["recovered_offset"] == 2 and values["fault_state"] == ["fired"]
    rows = {(r["broker"], r["client"]): r for r in values["negotiation"]}
    assert rows[("Kafka 2.8", "kafka-python")]["kafka-python infers"] == "2.8"
    assert rows[("Kafka 2.8", "kafka-python")]["ApiVersions sent"].startswith("[4, 3")    # refused v4, then v3
    assert "4" not in rows[("Kafka 2.8", "librdkafka")]["ApiVersions sent"]
    for client in ("kafka-python", "librdkafka"):
        assert (rows[("Kafka 2.8", client)]["Metadata"], rows[("Kafka 2.8", client)]["Produce"]) == ("11", "9")
    assert (rows[("default", "librdkafka")]["Metadata"], rows[("default", "librdkafka")]["Produce"]) == ("13", "10")
    assert "08-faults-and-personas.ipynb" in "".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert elapsed < TIME_LIMIT
