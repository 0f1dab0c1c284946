"""KIP-848's server-side assignors: ``uniform`` (the default) and ``range``, as plain functions.

An assignor takes each member's subscribed topics (``{member_id: {topic, ...}}``), the partition count of
every topic (``{topic: n}``) and the current assignment (``{member_id: {(topic, partition), ...}}``), and
returns the target assignment in the same shape. Both are deterministic (members are taken in id order).
"""
from __future__ import annotations

Assignment = dict[str, set[tuple[str, int]]]


def uniform(subscriptions: dict[str, set[str]], partitions: dict[str, int], current: Assignment) -> Assignment:
    """Balanced and sticky: each member keeps what it owns up to an even share, then every unowned partition
    goes to the subscribed member holding fewest (ties: lowest member id)."""
    members = sorted(subscriptions)
    wanted = sorted((t, p) for t in partitions if any(t in s for s in subscriptions.values())
                    for p in range(partitions[t]))
    target: Assignment = {m: set() for m in members}
    if not members:
        return target
    floor, extra = divmod(len(wanted), len(members))
    taken: set = set()
    for limit in (floor, floor + 1):          # every member keeps up to the even share, then a few one more
        for m in members:
            for tp in sorted(current.get(m, ())):
                if len(target[m]) >= limit or (limit > floor and extra == 0):
                    break
                if tp[0] in subscriptions[m] and tp[1] < partitions.get(tp[0], 0) and tp not in taken:
                    target[m].add(tp)
                    taken.add(tp)
                    extra -= limit > floor
    for tp in wanted:
        if tp not in taken:
            owner = min((m for m in members if tp[0] in subscriptions[m]), key=lambda m: (len(target[m]), m))
            target[owner].add(tp)
    return target


def range_(subscriptions: dict[str, set[str]], partitions: dict[str, int], current: Assignment) -> Assignment:
    """Per topic, contiguous ranges of partitions to the subscribed members in id order, the first ones
    taking one more when the count does not divide."""
    target: Assignment = {m: set() for m in subscriptions}
    for topic, count in sorted(partitions.items()):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        start = 0
        for i, m in enumerate(members):
            size = count // len(members) + (1 if i < count % len(members) else 0)
            target[m].update((topic, p) for p in range(start, start + size))
            start += size
    return target


ASSIGNORS = {"uniform": uniform, "range": range_}
DEFAULT_ASSIGNOR = "uniform"
