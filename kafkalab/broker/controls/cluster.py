"""A cluster in one process: node ids, their listeners, replica sets, leaders and finalized features.

``Broker(nodes=3)`` gives node ids ``node_id .. node_id+2``, each with every configured listener (PLAINTEXT and
the SASL_PLAINTEXT, SSL, SASL_SSL ones asked for): :attr:`Cluster.listeners` maps a listener name to each
node's address on it, so metadata can answer with the listener a request came in on, as Kafka does.

Every partition has a replica list (at first all nodes, rotated so partitions spread: the first replica, the
preferred leader, of partition p is node ``(p + the topic's spread offset) % n``) and a leader, moved on demand
with :meth:`Cluster.move`, which bumps the partition's leader epoch as Kafka does, so clients that check epochs
(KIP-320) accept the new leader. :meth:`elect_preferred` and :meth:`reassign` are what ElectLeaders and
AlterPartitionReassignments do. Storage is shared (the nodes are views of one log), so a reassignment completes at
once and a leader change loses nothing that was acknowledged. ``metadata_offset`` counts the changes, as the
metadata log's high watermark would. Sans-IO.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from .quorum import Quorum

#: Feature flags (KIP-584) the broker supports, name -> (min level, max level), and their finalized levels.
#: metadata.version 25 is the level of Kafka 4.0 (4.0-IV3); the others stay at 0 (not finalized), so clients
#: keep the protocols the broker implements.
SUPPORTED_FEATURES = {"metadata.version": (1, 25)}
FINALIZED_FEATURES = {"metadata.version": 25}


@dataclass
class Cluster:
    node_ids: list[int]
    listeners: dict[str, dict[int, tuple[str, int]]] = field(default_factory=dict)  # name -> node -> (host, port)
    moved: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)   # (topic, p) -> (leader, epoch)
    assigned: dict[tuple[str, int], list[int]] = field(default_factory=dict)      # reassigned replica lists
    features: dict[str, int] = field(default_factory=lambda: dict(FINALIZED_FEATURES))
    features_epoch: int = 0
    metadata_offset: int = 0
    quorum: Quorum = None            # the KRaft voters (controls/quorum.py); at first the lowest node alone

    def __post_init__(self) -> None:
        if self.quorum is None:
            self.quorum = Quorum.first_of(self.node_ids)

    @property
    def endpoints(self) -> dict[int, tuple[str, int]]:
        """{node id: (host, port)} on the PLAINTEXT listener."""
        return self.listeners.setdefault("PLAINTEXT", {})

    def listener_at(self, port: int) -> str | None:
        """The name of the listener one of whose nodes is bound to ``port`` (every listener binds one host)."""
        return next((name for name, nodes in self.listeners.items()
                     if any(address[1] == port for address in nodes.values())), None)

    @property
    def size(self) -> int:
        return len(self.node_ids)

    @property
    def controller(self) -> int:
        """The active controller: the quorum's leader."""
        return self.quorum.leader

    def replicas(self, topic: str, partition: int) -> list[int]:
        """The replica list; its first node is the preferred leader."""
        found = self.assigned.get((topic, partition))
        if found is not None:
            return list(found)
        start = (partition + zlib.crc32(topic.encode())) % self.size
        return self.node_ids[start:] + self.node_ids[:start]

    def leader(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader node id, leader epoch) of a partition."""
        found = self.moved.get((topic, partition))
        return found if found is not None else (self.replicas(topic, partition)[0], 0)

    def leads(self, node_id: int, topic: str, partition: int) -> bool:
        return self.leader(topic, partition)[0] == node_id

    def move(self, topic: str, partition: int, node: int | None = None) -> tuple[int, int]:
        """Make ``node`` (default: the replica after the current leader) the leader; returns the new
        (leader, epoch)."""
        current, epoch = self.leader(topic, partition)
        replicas = self.replicas(topic, partition)
        if node is None:
            node = replicas[(replicas.index(current) + 1) % len(replicas)] if current in replicas else replicas[0]
        if node not in replicas:
            raise ValueError(f"node {node} is not a replica of {topic}-{partition} (replicas {replicas})")
        if node != current:
            epoch += 1
            self.metadata_offset += 1
        self.moved[(topic, partition)] = (node, epoch)
        return node, epoch

    def elect_preferred(self, topic: str, partition: int) -> bool:
        """Move leadership back to the preferred replica; False when it already leads (ELECTION_NOT_NEEDED)."""
        preferred = self.replicas(topic, partition)[0]
        if self.leads(preferred, topic, partition):
            return False
        self.move(topic, partition, preferred)
        return True

    def replica_problem(self, replicas: list[int]) -> str | None:
        if not replicas:
            return "The replica list is empty."
        if len(set(replicas)) != len(replicas):
            return f"The replica list {replicas} repeats a node."
        unknown = [r for r in replicas if r not in self.node_ids]
        return f"Nodes {unknown} are not in the cluster (nodes {self.node_ids})." if unknown else None

    def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
        """Give a partition a new replica list (complete at once: the log is shared); a leader that is no longer
        a replica hands over to the new first replica."""
        leader, epoch = self.leader(topic, partition)
        self.assigned[(topic, partition)] = list(replicas)
        self.metadata_offset += 1
        self.moved[(topic, partition)] = (leader, epoch) if leader in replicas else (replicas[0], epoch + 1)

    def finalize(self, feature: str, level: int) -> None:
        if level == 0:
            self.features.pop(feature, None)
        else:
            self.features[feature] = level
        self.features_epoch += 1
        self.metadata_offset += 1
