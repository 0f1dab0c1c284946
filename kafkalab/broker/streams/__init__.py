"""Streams groups (KIP-1071): the broker-side rebalance protocol of Kafka Streams applications."""
from .groups import StreamsGroup, StreamsGroups, StreamsMember

__all__ = ["StreamsGroup", "StreamsGroups", "StreamsMember"]
