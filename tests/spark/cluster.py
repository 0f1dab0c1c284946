"""A real Spark standalone cluster on 127.0.0.1 for the tests: one master and N workers, started with pyspark's
own ``spark-class`` launcher and stopped by process group."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spark_home() -> str:
    from pyspark.find_spark_home import _find_spark_home
    return _find_spark_home()


class StandaloneCluster:
    """``with StandaloneCluster(workers=2) as url:`` gives ``spark://127.0.0.1:PORT`` with every worker alive."""

    def __init__(self, workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.workdir, self.workers, self.cores, self.memory = workdir, workers, cores, memory
        self.processes: list[subprocess.Popen] = []
        self.port, self.ui_port = free_port(), free_port()

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _launch(self, name: str, *args: str) -> None:
        env = dict(os.environ, SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                   SPARK_NO_DAEMONIZE="1")
        log = open(self.workdir / f"{name}.log", "wb")
        command = [str(Path(spark_home()) / "bin" / "spark-class"), *args]
        self.processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, start_new_session=True))

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as answer:
                state = json.load(answer)
        except OSError:
            return -1
        return sum(1 for worker in state.get("workers", ()) if worker.get("state") == "ALIVE")

    def __enter__(self) -> str:
        self._launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(self.port), "--webui-port", str(self.ui_port))
        for n in range(self.workers):
            self._launch(f"worker{n}", "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                         "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(free_port()),
                         "--work-dir", str(self.workdir / f"work{n}"))
        deadline = time.monotonic() + 120
        while self.alive_workers() < self.workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                self.__exit__()
                logs = "\n".join((self.workdir / f).read_text(errors="replace")[-2000:]
                                 for f in os.listdir(self.workdir) if f.endswith(".log"))
                raise RuntimeError(f"the standalone cluster did not come up:\n{logs}")
            time.sleep(0.5)
        return self.url

    def __exit__(self, *exc) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()
