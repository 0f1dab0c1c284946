"""The broker's shared state, as handlers see it: config, storage, producer ids, who is listening for appends.

Sans-IO: no sockets, no clocks, no asyncio. The server adapter registers an append listener (to wake long
polling fetches) and sets the advertised address once it is listening.
"""
from __future__ import annotations

from typing import Callable

from .config import BrokerConfig, topic_name_problem
from .storage import Store, Topic


class BrokerState:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.store = Store(config.data_dir, config.segment_bytes)
        self.node_id = config.node_id
        self.cluster_id = config.cluster_id
        self.advertised_host = config.host
        self.advertised_port = config.port
        self.next_producer_id = max(1000, self.store.max_producer_id + 1)
        self.append_listeners: list[Callable[[], None]] = []

    def topic_config(self, topic: Topic, name: str) -> str | None:
        value = topic.configs.get(name)
        return value if value is not None else self.config.topic_config_default(name)

    def create_topic(self, name: str, partitions: int | None = None, configs: dict[str, str] | None = None) -> Topic:
        problem = topic_name_problem(name)
        if problem:
            raise ValueError(problem)
        if name in self.store.topics:
            raise ValueError(f"Topic '{name}' already exists.")
        return self.store.create_topic(name, partitions or self.config.default_partitions, configs)

    def allocate_producer_id(self) -> int:
        pid = self.next_producer_id
        self.next_producer_id += 1
        return pid

    def appended(self) -> None:
        for listener in self.append_listeners:
            listener()

    def close(self) -> None:
        self.store.close()
