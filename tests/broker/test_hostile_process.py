"""The command line under a hostile environment: SIGTERM still shuts the broker down cleanly (and
``--write-pcap`` writes the journal), ``kafkalab decode -`` with standard input closed is a clear error."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from broker_helpers import RawClient

ENV = {**os.environ, "PYTHONPATH": os.getcwd()}


def test_sigterm_shuts_down_and_writes_the_pcap(tmp_path):
    pcap = tmp_path / "journal.pcap"
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab", "broker", "--port", "0", "--write-pcap", str(pcap)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=ENV)
    try:
        line = proc.stdout.readline()
        bootstrap = line.split(" on ")[1].split()[0]
        client = RawClient(bootstrap)
        assert client.call("ApiVersions", 3, {})["error_code"] == 0
        client.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert "wrote 2 journaled frames" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert pcap.stat().st_size > 24


@pytest.mark.parametrize("command", ["decode", "stats"])
def test_reading_a_capture_from_closed_stdin_is_a_clear_error(command):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kafkalab", command, "-"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env=ENV, timeout=60,
                          preexec_fn=lambda: os.close(0))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "standard input is closed" in done.stderr
    assert time.monotonic() - started < 60
