"""The one place Kafka's CamelCase names become kafkalab's snake_case names."""
from __future__ import annotations

import re
from functools import lru_cache

_ACRONYM_BOUNDARY = re.compile(r"([A-Z]+)([A-Z][a-z])")
_WORD_BOUNDARY = re.compile(r"([a-z0-9])([A-Z])")


@lru_cache(maxsize=None)
def snake_case(name: str) -> str:
    """ThrottleTimeMs -> throttle_time_ms, ISRNodes -> isr_nodes, TopicID -> topic_id."""
    name = _ACRONYM_BOUNDARY.sub(r"\1_\2", name)
    return _WORD_BOUNDARY.sub(r"\1_\2", name).lower()
