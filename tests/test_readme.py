"""The README's examples work as written: its Python blocks run, its `kafkalab dissect` line decodes."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
RUNNABLE = [block for block in re.findall(r"```python\n(.*?)```", README, re.S)
            if "traffic.pcapng" not in block and "kafkalab.Broker()" not in block and "kafkalab.spark" not in block]
CAPTURES = Path(__file__).resolve().parents[1] / "captures"


@pytest.mark.parametrize("index", range(len(RUNNABLE)))
def test_python_blocks_run(index: int) -> None:
    namespace: dict = {}
    exec(compile(RUNNABLE[index], f"README block {index}", "exec"), namespace)


def test_codec_block_shows_what_it_says() -> None:
    from kafkalab.protocol import decode_request, encode_request
    frame = encode_request("Metadata", 12, {"topics": [{"name": "orders"}]}, correlation_id=7, client_id="me")
    request = decode_request(frame)
    assert (request.api_name, request.api_version, request.client_id) == ("Metadata", 12, "me")
    assert "('Metadata', 12, 'me'," in README


def test_dissect_example_line_decodes() -> None:
    line = next(l for l in README.splitlines() if l.startswith("kafkalab dissect 0000"))
    hex_frame = line.split()[2]
    run = subprocess.run([sys.executable, "-m", "kafkalab", "dissect", hex_frame], capture_output=True, text=True,
                         timeout=60, cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 0, run.stderr
    assert "ApiVersionsRequest v3" in run.stdout and "client_software_name: 'cli'" in run.stdout


def test_notebook_block_against_a_live_broker(tmp_path: Path) -> None:
    """The "In a notebook" block, with real traffic and a real capture in place of the placeholders."""
    import kafkalab
    from kafkalab.notebook import Explorer
    from confluent_kafka import Producer

    block = next(b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "kafkalab.Broker()" in b)
    broker = kafkalab.Broker().start()
    try:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 1})
        producer.produce("orders", key=b"k", value=b"v")
        assert producer.flush(10) == 0
        pcap = tmp_path / "traffic.pcapng"
        written = broker.write_pcap(pcap)
        code = (block.replace("kafkalab.Broker().start()", "existing_broker").replace("cap[12]", "cap[2]")
                .replace('"traffic.pcapng"', repr(str(pcap))))
        namespace = {"existing_broker": broker}
        exec(compile(code, "README notebook block", "exec"), dict(namespace, __name__="readme"))
        cap = kafkalab.read_capture(pcap)
        assert len(cap.frames) == written and isinstance(kafkalab.explore(cap), Explorer)
    finally:
        broker.stop()


def test_spark_block_runs_on_the_shipped_captures() -> None:
    """The Spark block, with the shipped captures in place of its placeholder file names."""
    from tests.tools import require_tool
    require_tool("java")
    block = next(b for b in re.findall(r"```python\n(.*?)```", README, re.S) if "kafkalab.spark" in b)
    code = (block.replace('"rotated/*.pcap"', repr(str(CAPTURES / "produce-consume-*.pcap")))
            .replace('["a.pcap", "b.pcap"]', repr([str(CAPTURES / "admin.pcap"), str(CAPTURES / "lossy.pcap")])))
    assert code != block
    namespace: dict = {}
    exec(compile(code, "README Spark block", "exec"), namespace)
    assert namespace["cap"].frames.count() > 0
