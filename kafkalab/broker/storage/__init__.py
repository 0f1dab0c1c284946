"""Broker storage: segments (memory or files), partition logs, producer state, topics and offsets."""
from .log import PartitionLog
from .producers import Duplicate, ProducerStates
from .store import Committed, Partition, Store, Topic

__all__ = ["PartitionLog", "ProducerStates", "Duplicate", "Store", "Topic", "Partition", "Committed"]
