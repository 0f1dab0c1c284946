"""kafkalab loads numpy with OpenBLAS's idle worker threads asleep at once (``kafkalab._idle_blas_threads_sleep``):
no CPU burnt by threads spinning for work kafkalab never gives them, BLAS still on every core, and nothing
changed where the user chose otherwise or loaded numpy first. Checked in fresh interpreters, on the worker
threads' own CPU time."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalab

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import os, sys, time
FIRST
import kafkalab
import numpy
time.sleep(0.4)                                 # longer than OpenBLAS's default spin before it sleeps
me = os.getpid()
workers = [t for t in os.listdir(f"/proc/{me}/task") if int(t) != me]
used = 0
for tid in workers:
    with open(f"/proc/{me}/task/{tid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    used += int(fields[11]) + int(fields[12])
print(os.environ.get("OPENBLAS_THREAD_TIMEOUT"), len(workers), used / os.sysconf("SC_CLK_TCK"))
"""


def _probe(numpy_first: bool = False, **env: str) -> tuple[str, int, float]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_"))}
    environment.update(env, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", PROBE.replace("FIRST", "import numpy" if numpy_first else "")],
                         capture_output=True, text=True, check=True, env=environment, cwd=ROOT).stdout.split()
    return out[0], int(out[1]), float(out[2])


needs_threads = pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
                                   reason="OpenBLAS starts worker threads on a Linux machine with several cores")


@needs_threads
def test_numpy_loaded_by_kafkalab_keeps_its_blas_threads_but_they_do_not_spin() -> None:
    timeout, workers, cpu = _probe()
    assert timeout == kafkalab.BLAS_THREAD_TIMEOUT
    assert workers >= 1                         # BLAS still has its worker threads...
    assert cpu < 0.03                           # ...asleep: not a tenth of a second each spinning
    _, default_workers, default_cpu = _probe(OPENBLAS_THREAD_TIMEOUT="28")     # OpenBLAS's default
    assert default_workers == workers
    assert default_cpu > cpu


def test_the_users_choice_and_a_numpy_loaded_first_are_left_alone() -> None:
    assert _probe(OPENBLAS_THREAD_TIMEOUT="24")[0] == "24"
    assert _probe(numpy_first=True)[0] == "None"
