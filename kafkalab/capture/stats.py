"""``kafkalab stats``: per-API counts and latency percentiles, errors, top topics, client versions and
diagnostics of a capture, gathered batch by batch, as a report (JSON-able) and as text.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable

from kafkalab.dissect.frame import Frame

from .writers import Painter


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
