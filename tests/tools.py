"""What some tests need beyond Python packages, in one place: programs CI installs (tshark, kcat, chromium,
node, the kafkajs npm package, Java) and root (for packet sockets).

A test calls ``require_tool("tshark")`` (or :func:`require` for something that is not a program on PATH).
Where the tool is missing the test skips, naming the line of ``.ci/run`` that installs it, so that
``make test`` passes on a machine with none of them; under CI (the ``CI`` variable set) it fails instead,
because CI installs them all and a missing one there is a broken CI script, not a reason to skip.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CI_SCRIPT = REPO / ".ci" / "run"
# tool -> the word that names it on the .ci/run line that installs it
INSTALLED_AS = {"tshark": "tshark", "kcat": "kcat", "chromium": "chromium", "node": "nodejs",
                "kafkajs": "npm install", "java": "openjdk"}

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="packet sockets need root (CI runs as root)")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def ci_line(word: str) -> str:
    """The line of .ci/run that installs ``word``, as ``.ci/run:N `command```."""
    for number, line in enumerate(CI_SCRIPT.read_text().splitlines(), 1):
        if word in line and not line.lstrip().startswith("#"):
            return f".ci/run:{number} `{line.strip()}`"
    raise LookupError(f".ci/run installs no {word!r}: add it there, or drop the test that needs it")


def require(what: str, present: bool, installed_by: str) -> None:
    """Skip the calling test (fail it under CI) unless ``present``; ``installed_by`` says how to get it."""
    if present:
        return
    message = f"{what} is not installed; {installed_by} installs it"
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=True)


def require_tool(name: str) -> str:
    """The path of program ``name`` (one of INSTALLED_AS), or skip/fail as :func:`require` does."""
    path = shutil.which(name)
    require(name, path is not None, ci_line(INSTALLED_AS[name]))
    return path
