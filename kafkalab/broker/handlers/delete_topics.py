"""DeleteTopics (20), v0-v6: delete topics by name (v0-v5 ``topic_names``) or by name or id (v6 ``topics``).

Per entry, as KRaft Kafka answers: UNKNOWN_TOPIC_OR_PARTITION for a name it does not have, UNKNOWN_TOPIC_ID
for an id; INVALID_REQUEST for an entry with neither a name nor an id, with both, for a name or id given
twice (one answer per duplicate), and for a name whose topic another entry already names by id. The other
entries are deleted: partitions, segment files and the topic's committed offsets go. v5+ carries error
messages; v6 answers with the topic id too.
"""
from __future__ import annotations

import uuid
from collections import Counter

from kafkalab.protocol import ApiKey, ErrorCode

from .base import Handler

ZERO_UUID = uuid.UUID(int=0)


def handle(ctx, body: dict) -> dict:
    if ctx.api_version >= 6:
        entries = [(t.get("name"), t.get("topic_id") or ZERO_UUID) for t in body.get("topics", ())]
    else:
        entries = [(name, ZERO_UUID) for name in body.get("topic_names", ())]
    return {"throttle_time_ms": 0, "responses": _delete_all(ctx, entries)}


def _delete_all(ctx, entries: list[tuple[str | None, uuid.UUID]]) -> list[dict]:
    store = ctx.state.store
    names = Counter(n for n, i in entries if n is not None and i == ZERO_UUID)
    ids = Counter(i for n, i in entries if n is None and i != ZERO_UUID)
    by_id_names = {store.by_id[i].name for i in ids if ids[i] == 1 and i in store.by_id}
    out, answered = [], set()
    for name, topic_id in entries:
        key = (name, topic_id)
        if key in answered:
            continue
        answered.add(key)
        if name is None and topic_id == ZERO_UUID:
            out.append(_result(None, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Give a topic name or a topic id."))
        elif name is not None and topic_id != ZERO_UUID:
            out.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST, "Give a topic name or a topic id, not both."))
        elif names[name] > 1 or ids[topic_id] > 1:
            out.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST,
                               f"Topic {name or topic_id} is named more than once."))
        elif name is not None and name in by_id_names:
            out.append(_result(name, store.topics[name].topic_id, ErrorCode.INVALID_REQUEST,
                               f"Topic {name} is also named by its id in this request."))
        else:
            out.append(_delete(ctx, name, topic_id))
    return out


def _delete(ctx, name: str | None, topic_id: uuid.UUID) -> dict:
    store = ctx.state.store
    topic = store.topic(name) if name is not None else store.by_id.get(topic_id)
    if topic is None:
        if name is None:
            return _result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, "This server does not know that topic id.")
        return _result(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host that topic.")
    if not ctx.allowed("DELETE", "TOPIC", topic.name):
        return _result(name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
    ctx.state.delete_topic(topic.name)
    return _result(topic.name, topic.topic_id, ErrorCode.NONE, None)


def _result(name, topic_id, error: int, message: str | None) -> dict:
    return {"name": name, "topic_id": topic_id, "error_code": error, "error_message": message}


HANDLER = Handler(ApiKey.DELETE_TOPICS, 0, 6, handle)
