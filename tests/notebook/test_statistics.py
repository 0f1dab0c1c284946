"""The explorer's Statistics panel without a browser: Conversations, the I/O graph and response time per API,
on a shipped capture (checked against the capture's own connections table and ``kafkalab stats``' numbers)
and on a live broker that the explorer follows (acks=0 Produce is not "unanswered"; the panel grows)."""
from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

import kafkalab
from kafkalab.capture.stats import CaptureStats
from kafkalab.notebook import explore
from kafkalab.notebook.plots import io_graph, io_graph_svg
from kafkalab.notebook.plots.io_svg import CHAR, FONT, nice_step

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def capture():
    return kafkalab.read_capture(CAPTURES / "produce-consume-none.pcap")


def test_conversations_agree_with_the_captures_connections(capture) -> None:
    ex = explore(capture)
    stats = ex.show_statistics()
    connections = capture.connections.set_index("stream")
    assert [c["stream"] for c in stats["conversations"]] == sorted(connections.index)
    for row in stats["conversations"]:
        tcp = connections.loc[row["stream"]]
        assert (row["client"], row["server"]) == (tcp["client"], tcp["server"])
        assert (row["requests"], row["responses"]) == (tcp["requests"], tcp["responses"])
        # the frames' sizes leave out each message's 4-byte length prefix, which TCP carried
        assert (row["client_bytes"] + 4 * row["requests"], row["server_bytes"] + 4 * row["responses"]) == \
            (tcp["client_bytes"], tcp["server_bytes"])
        assert row["frames"] == row["requests"] + row["responses"] and row["duration_s"] >= 0
        ex.filter_text = row["filter"]                     # what clicking the row does
        assert ex.filter_error == "" and ex.match_total == row["frames"]
    assert sum(c["frames"] for c in stats["conversations"]) == stats["frames"] == len(capture.frames)


def test_response_times_are_the_same_numbers_as_kafkalab_stats(capture) -> None:
    ex = explore(capture)
    stats = ex.show_statistics()
    reference = CaptureStats()
    reference.add(capture.frame_list)
    expected = {a["api"]: a for a in reference.report()["apis"]}
    assert {r["api"] for r in stats["latency"]} == set(expected)
    for row in stats["latency"]:
        want = expected[row["api"]]
        assert (row["requests"], row["unanswered"], row["acks0"]) == \
            (want["requests"], want["unanswered"], want["no_response_expected"])
        for p in ("p50", "p90", "p99", "max"):
            assert row[f"{p}_ms"] == pytest.approx(want["latency_ms"][p], abs=1e-5)
        ex.filter_text = row["filter"]
        assert ex.match_total == (capture.frames["api_name"] == row["api"]).sum()
    ex._on_message(ex, {"type": "statistics", "show": False}, [])
    assert ex.statistics == {}


def test_the_io_graph_draws_io_graphs_numbers_readably(capture) -> None:
    svg = io_graph_svg(capture)
    root = ET.fromstring(svg)
    freq = root.get("data-freq")
    table = io_graph(capture, freq)
    seconds = pd.Timedelta(freq).total_seconds()
    apis = table.groupby("api_name")["frames"].sum().sort_values(ascending=False, kind="stable")
    legend = [g for g in root.iter(f"{SVG}g") if "io-legend" in g.get("class", "")]
    assert [g.get("data-api") for g in legend] == list(apis.index)
    assert all(g.get("data-filter") == f'api_name == "{g.get("data-api")}"' for g in legend)
    lines = [g for g in root.iter(f"{SVG}g") if g.get("class") == "io-series"]
    assert len(lines) == 2 * len(apis)                  # frames/s and bytes/s
    # the highest frames/s step of the busiest API is its busiest bin's frames over the bin width
    busiest = apis.index[0]
    peak = table[table.api_name == busiest]["frames"].max() / seconds
    top_plot = [g for g in lines if g.get("data-api") == busiest][0]
    ys = [float(p.split(",")[1]) for p in top_plot[0].get("points").split()]
    ticks = [t for t in root.iter(f"{SVG}text") if t.get("class") == "io-tick"]
    assert min(ys) < max(ys) and peak > 0
    value_ticks = [t for t in ticks if t.get("text-anchor") == "end"]
    assert 4 <= len(value_ticks) <= 14                  # 2 to 7 value ticks a plot
    # time labels of one axis never overlap
    for y in {t.get("y") for t in ticks if t.get("text-anchor") == "middle"}:
        xs = sorted(float(t.get("x")) for t in ticks if t.get("y") == y)
        widest = max(len(t.text) for t in ticks) * CHAR
        assert all(b - a > widest for a, b in zip(xs, xs[1:]))


def test_more_than_twenty_apis_keep_distinct_looks_and_separate_legend_rows() -> None:
    rows = []
    start = pd.Timestamp("2026-01-01", tz="UTC")
    for n in range(45):
        for k in range(3):
            rows.append({"time": start + pd.Timedelta(milliseconds=10 * k + n), "api_name": f"Api{n:02d}",
                         "size": 100 + n, "stream": 0, "kind": "request"})
    svg = io_graph_svg(pd.DataFrame(rows))
    root = ET.fromstring(svg)
    legend = [g for g in root.iter(f"{SVG}g") if "io-legend" in g.get("class", "")]
    looks = {(g[0].get("stroke"), g[0].get("stroke-dasharray")) for g in legend}
    assert len(legend) == len(looks) == 45
    ys = [float(g[1].get("y")) for g in legend]
    assert all(b - a >= FONT for a, b in zip(ys, ys[1:]))
    assert float(root.get("height")) >= ys[-1]
    assert nice_step(0.37) == 0.5 and nice_step(3) == 5 and nice_step(1000) == 1000


def test_a_followed_broker_keeps_its_statistics_current_and_acks0_is_not_unanswered() -> None:
    kafka = pytest.importorskip("kafka")
    with kafkalab.Broker(topics={"t": 1}) as broker:
        ex = explore(broker)
        follower = ex.follow(interval=60)                  # polled by hand below
        fire = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks=0, client_id="fire")
        for n in range(4):
            fire.send("t", b"v%d" % n)
        fire.flush()
        wait_for(lambda: follower.poll() >= 0 and (ex.frames.api_name == "Produce").sum() >= 1)   # one batch or more
        stats = ex.show_statistics()
        produce = {r["api"]: r for r in stats["latency"]}["Produce"]
        assert produce["acks0"] == produce["requests"] >= 1 and produce["unanswered"] == 0
        before = stats["frames"]
        sure = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks=1, client_id="sure")
        sure.send("t", b"answered").get(timeout=30)
        wait_for(lambda: follower.poll() >= 0 and ex.statistics["frames"] > before
                 and {r["api"]: r for r in ex.statistics["latency"]}["Produce"]["answered"] == 1)
        produce = {r["api"]: r for r in ex.statistics["latency"]}["Produce"]
        assert produce["unanswered"] == 0 and produce["p50_ms"] is not None
        clients = {c["stream"]: c for c in ex.statistics["conversations"]}
        assert len(clients) >= 2 and ex.statistics["frames"] == len(ex.frames)
        assert re.search(r'data-api="Produce"', ex.statistics["io_svg"])
        ex.unfollow()
        fire.close()
        sure.close()


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)
