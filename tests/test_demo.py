"""The README's first command: ``kafkalab demo`` runs the whole main job and reports what it did."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    run = subprocess.run([sys.executable, "-m", "kafkalab", "demo"], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    assert "confluent-kafka read back 200 of 200 records; kafka-python got 20 acks" in out
    decoded = re.search(r"bytes, (\d+) frames\); decoded (\d+) frames on (\d+) connections", out)
    assert decoded and decoded.group(1) == decoded.group(2) and int(decoded.group(3)) >= 5
    for topic, codec in [("demo.zstd", "zstd"), ("demo.snappy", "snappy"), ("demo.kafka-python", "gzip")]:
        assert re.search(rf"^{re.escape(topic)}\s+\d+\s+{codec}$", out, re.M), topic
    for api in ("ApiVersions", "Metadata", "Produce", "Fetch", "CreateTopics", "InitProducerId"):
        assert re.search(rf"^{api}\s+\d+", out, re.M), api
    assert "inflated [" in out and "'key-" in out
    pcap = Path(re.search(r"^files: (\S+)", out, re.M).group(1))
    assert pcap.stat().st_size > 10_000
    assert float(re.search(r"done in ([\d.]+) s", out).group(1)) < 60
