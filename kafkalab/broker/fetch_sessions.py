"""Fetch sessions (KIP-227): the broker remembers what a consumer fetches, so later requests and answers
carry only what changed.

Owns: the session cache (bounded; the least recently used session goes when it is full), session ids and
epochs, the partitions each session fetches (with their last request fields), and the rule of what an
incremental answer includes. Must not know: logs, records, clocks, the wire format beyond field names.

Theory of operation. A Fetch (v7+) says ``(session_id, session_epoch)``:

- ``(0, -1)``: no session; the request is whole and so is the answer (session id 0).
- ``(0, 0)``: open a session with the request's partitions; the answer is whole and names the new id.
- ``(id, 0)``: close ``id`` and open a new one as above; ``(id, -1)``: close ``id``, answer whole, no session.
- ``(id, n > 0)``: an incremental request: ``n`` must be the session's next epoch (else
  INVALID_FETCH_SESSION_EPOCH; an unknown id is FETCH_SESSION_ID_NOT_FOUND). Partitions listed are added or
  updated, ``forgotten_topics_data`` removed, and the broker fetches every partition of the session. The
  answer includes a partition only if it has records or an error, or if its high watermark, last stable offset
  or log start offset changed since the session last reported it.
"""
from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass, field

from kafkalab.protocol import ErrorCode

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
MAX_SESSIONS = 1000            # max.incremental.fetch.session.cache.slots
_REPORTED = ("high_watermark", "last_stable_offset", "log_start_offset")


@dataclass
class FetchSession:
    session_id: int
    next_epoch: int = 1
    partitions: OrderedDict = field(default_factory=OrderedDict)  # (topic key, partition) -> request fields
    reported: dict = field(default_factory=dict)                   # (topic key, partition) -> last reported

    def update(self, topics, forgotten, topic_key) -> None:
        for topic in topics:
            for p in topic.get("partitions", ()):
                self.partitions[(topic_key(topic), p["partition"])] = p
        for topic in forgotten:
            for index in topic.get("partitions", ()):
                key = (topic_key(topic), index)
                self.partitions.pop(key, None)
                self.reported.pop(key, None)

    def changed(self, key, result: dict) -> bool:
        """Whether an incremental answer includes this partition's result (and remember what it reports)."""
        now = tuple(result[name] for name in _REPORTED)
        include = bool(result["records"]) or result["error_code"] != ErrorCode.NONE or self.reported.get(key) != now
        self.reported[key] = now
        return include


class FetchSessions:
    def __init__(self, capacity: int = MAX_SESSIONS) -> None:
        self.capacity = capacity
        self.sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._ids = itertools.count(1)

    def open(self) -> FetchSession:
        while len(self.sessions) >= self.capacity:
            self.sessions.popitem(last=False)
        session = FetchSession(next(self._ids))
        self.sessions[session.session_id] = session
        return session

    def close(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)

    def resolve(self, session_id: int, epoch: int) -> tuple[int, FetchSession | None, bool]:
        """(error, the session to use or None for a sessionless fetch, whether the request is incremental)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id:
                self.close(session_id)
            return ErrorCode.NONE, (self.open() if epoch == INITIAL_EPOCH else None), False
        session = self.sessions.get(session_id)
        if session is None:
            return ErrorCode.FETCH_SESSION_ID_NOT_FOUND, None, False
        if epoch != session.next_epoch:
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, None, False
        self.sessions.move_to_end(session_id)
        return ErrorCode.NONE, session, True
