"""Fuzz targets import the shared test helpers (tests/, tests/broker) and write their tallies at the end."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "broker")]


def pytest_sessionfinish(session, exitstatus):
    from fuzz_support import write_log
    write_log()
