"""Fixtures for broker tests: a started broker, a raw client speaking through the project's codec."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))                    # tests/broker: broker_helpers
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/: codec_checks

from broker_helpers import RawClient  # noqa: E402

from kafkalab.broker import Broker  # noqa: E402

TIMEOUT = 20.0


@pytest.fixture
def broker():
    with Broker(topics={"t": 2}) as b:
        yield b


@pytest.fixture
def raw(broker):
    clients = []

    def connect() -> RawClient:
        clients.append(RawClient(broker.bootstrap_servers))
        return clients[-1]
    yield connect
    for c in clients:
        c.close()
