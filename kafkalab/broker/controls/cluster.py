"""A cluster in one process: node ids, their listeners, and who leads each partition.

``Broker(nodes=3)`` gives node ids ``node_id .. node_id+2``, one listener each. Every partition has one
replica set (all nodes) and a leader: spread round-robin at first (partition p of a topic on node
``(p + topic's spread offset) % n``), moved on demand with :meth:`Cluster.move`, which bumps the partition's
leader epoch as Kafka does, so clients that check epochs (KIP-320) accept the new leader. Storage is shared:
the nodes are views of one log, so a leader change loses nothing that was acknowledged. Sans-IO.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field


@dataclass
class Cluster:
    node_ids: list[int]
    endpoints: dict[int, tuple[str, int]] = field(default_factory=dict)   # node id -> (host, port)
    moved: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)  # (topic, p) -> (leader, epoch)

    @property
    def size(self) -> int:
        return len(self.node_ids)

    @property
    def controller(self) -> int:
        return self.node_ids[0]

    def leader(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader node id, leader epoch) of a partition."""
        found = self.moved.get((topic, partition))
        if found is not None:
            return found
        spread = zlib.crc32(topic.encode()) % self.size
        return self.node_ids[(partition + spread) % self.size], 0

    def leads(self, node_id: int, topic: str, partition: int) -> bool:
        return self.leader(topic, partition)[0] == node_id

    def move(self, topic: str, partition: int, node: int | None = None) -> tuple[int, int]:
        """Make ``node`` (default: the next node id after the current leader) the leader; returns the new
        (leader, epoch)."""
        current, epoch = self.leader(topic, partition)
        if node is None:
            node = self.node_ids[(self.node_ids.index(current) + 1) % self.size]
        if node not in self.node_ids:
            raise ValueError(f"node {node} is not in this cluster (nodes {self.node_ids})")
        self.moved[(topic, partition)] = found = (node, epoch + 1 if node != current else epoch)
        return found

    def endpoint(self, node_id: int, fallback: tuple[str, int]) -> tuple[str, int]:
        return self.endpoints.get(node_id, fallback)
