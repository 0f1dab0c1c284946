"""KIP-932 share groups (queues): members, share sessions and per-partition delivery state. Sans-IO."""
from .groups import ShareGroup, ShareGroups
from .partition import ACCEPT, GAP, REJECT, RELEASE, SharePartition

__all__ = ["ShareGroups", "ShareGroup", "SharePartition", "GAP", "ACCEPT", "RELEASE", "REJECT"]
