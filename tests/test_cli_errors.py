"""The errors a new user meets first on the command line: each is one line on stderr saying what is wrong and
what to do, with exit code 2 and no traceback. Run as whole processes, as a user runs them; ``--help``
describes every command."""
from __future__ import annotations

import ctypes
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from tests.tools import needs_root

REPO = Path(__file__).resolve().parents[1]
PR_CAPBSET_DROP, CAP_NET_RAW = 24, 13


def kafkalab(*args: str, preexec_fn=None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, preexec_fn=preexec_fn)


def one_line_error(run: subprocess.CompletedProcess, *words: str) -> str:
    """The single stderr line of a failed run (exit 2), checked to contain ``words``."""
    assert run.returncode == 2, (run.returncode, run.stderr)
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkalab"), run.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def test_a_missing_capture_file(tmp_path):
    for command in ("decode", "stats"):
        one_line_error(kafkalab(command, str(tmp_path / "nope.pcap")), "no such capture file", "nope.pcap",
                       "check the path")


def test_a_file_that_is_not_a_capture(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("these are notes, not packets\n")
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    line = one_line_error(kafkalab("decode", str(text)), "notes.txt", "not a pcap or pcapng file", "tcpdump -w")
    assert "7468" in line                                  # the first bytes it found ("th")
    one_line_error(kafkalab("stats", str(empty)), "empty", "give a pcap or pcapng capture")
    one_line_error(kafkalab("decode", str(tmp_path)), "is a directory")


def test_a_missing_frame_file(tmp_path):
    one_line_error(kafkalab("dissect", "-r", str(tmp_path / "frame.bin")), "no such file", "frame.bin")


@needs_root
def test_a_nonexistent_interface():
    line = one_line_error(kafkalab("sniff", "-i", "no-such-if0", "-a", "1"), "no interface named 'no-such-if0'")
    assert "lo" in line.split("this machine has", 1)[1]


def _without_cap_net_raw() -> None:
    """Run as root, but without the capability packet sockets need (dropped before exec, for good)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_CAPBSET_DROP, CAP_NET_RAW, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_no_permission_to_capture():
    drop = _without_cap_net_raw if os.geteuid() == 0 else None
    one_line_error(kafkalab("sniff", "-i", "lo", "-a", "1", preexec_fn=drop), "no permission to capture",
                   "CAP_NET_RAW", "sudo")


@needs_root
def test_a_pcap_that_cannot_be_written(tmp_path):
    one_line_error(kafkalab("sniff", "-i", "lo", "-a", "1", "-w", str(tmp_path / "no" / "dir" / "out.pcap")),
                   "cannot write", "out.pcap")


def test_a_port_in_use_for_the_broker():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        line = one_line_error(kafkalab("broker", "--port", str(port)), f"port {port}", "already in use",
                              "--port 0")
    assert "Errno" not in line


def test_help_describes_every_command():
    run = kafkalab("--help")
    assert run.returncode == 0
    commands = re.search(r"\{([a-z,]+)\}", run.stdout).group(1).split(",")
    listed = {line.split()[0]: " ".join(line.split()[1:]) for line in run.stdout.splitlines()
              if line.startswith("    ") and line.split() and line.split()[0] in commands}
    assert set(listed) == set(commands) and all(listed.values()), run.stdout
    assert "real clients" in listed["demo"] and "pcap" in listed["demo"]
    assert "scapy" not in run.stdout and "codec at work" not in run.stdout
    for command in commands:
        assert kafkalab(command, "--help").returncode == 0, command
