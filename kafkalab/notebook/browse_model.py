"""The message browser's model: what the broker holds, read on the broker's own loop, as plain dicts.

Topics, partitions with their offsets (log start, high watermark, last stable offset), records read through
the partition log and the codec's ``decode_records`` (no second decoder), and consumer groups as the group
coordinator describes them, with each committed offset's lag (classic groups, and KIP-848 ``consumer`` groups with
their epochs and server-side assignor). Nothing here keeps state of its own: every
call asks the broker, so what the browser shows is what a client would be told. Needs no widget library.
"""
from __future__ import annotations

import json
from typing import Any

from kafkalab.protocol import ProtocolError
from kafkalab.protocol.payloads import ASSIGNMENT, CONSUMER, decode_payload
from kafkalab.protocol.records import decode_records

RENDERINGS = ("auto", "json", "text", "hex")
READ_BYTES = 64 * 1024        # bytes of log decoded per step (whole batches, at least one): a page costs little


def render(value: bytes | None, mode: str = "auto") -> dict:
    """``{"as": json|text|hex|null, "text": ...}`` for a key, value or header value. ``auto`` picks JSON when
    the bytes parse as JSON, text when they are printable UTF-8, else hex; an explicit mode that does not fit
    the bytes falls back to hex and says so."""
    if mode not in RENDERINGS:
        raise ValueError(f"unknown rendering {mode!r} (one of {', '.join(RENDERINGS)})")
    if value is None:
        return {"as": "null", "text": "null"}
    value = bytes(value)
    if mode in ("auto", "json"):
        try:
            return {"as": "json", "text": json.dumps(json.loads(value), indent=1, ensure_ascii=False)}
        except (ValueError, UnicodeDecodeError):
            if mode == "json":
                return {"as": "hex", "text": value.hex(" "), "note": "not JSON"}
    if mode in ("auto", "text"):
        try:
            text = value.decode("utf-8")
            if text.isprintable() or all(c.isprintable() or c in "\n\r\t" for c in text):
                return {"as": "text", "text": text}
        except UnicodeDecodeError:
            pass
        if mode == "text":
            return {"as": "hex", "text": value.hex(" "), "note": "not UTF-8 text"}
    return {"as": "hex", "text": value.hex(" ")}


def topics(state) -> list[dict]:
    """Every topic with its number of partitions and records (high watermark minus log start, summed);
    ``internal`` marks the broker's own topics (``__consumer_offsets``, ``__transaction_state``)."""
    out = []
    for name in sorted(state.store.topics):
        parts = partitions(state, name)
        out.append({"topic": name, "internal": name.startswith("__"), "partitions": len(parts),
                    "records": sum(p["high_watermark"] - p["log_start_offset"] for p in parts)})
    return out


def partitions(state, topic: str) -> list[dict]:
    found = state.store.topic(topic)
    if found is None:
        raise KeyError(f"no topic {topic!r}")
    return [{"partition": p.index, "log_start_offset": p.log.log_start_offset,
             "high_watermark": p.log.high_watermark, "last_stable_offset": p.log.last_stable_offset}
            for p in found.partitions]


def _log(state, topic: str, partition: int):
    found = state.store.partition(topic, partition)
    if found is None:
        raise KeyError(f"no partition {topic}-{partition}")
    return found.log


def offset_for_time(state, topic: str, partition: int, timestamp_ms: int) -> int:
    """The first offset whose timestamp is at or after ``timestamp_ms`` (ListOffsets' answer); the high
    watermark when every record is older."""
    log = _log(state, topic, partition)
    found = log.offset_for_timestamp(timestamp_ms)
    return found[0] if found is not None else log.high_watermark


def read(state, topic: str, partition: int, offset: int, limit: int = 50, mode: str = "auto") -> list[dict]:
    """Up to ``limit`` records from ``offset`` on (clamped to the log start), control records left out, each
    with offset, timestamp, key, value and headers rendered by ``mode``."""
    log = _log(state, topic, partition)
    offset = max(offset, log.log_start_offset)
    out: list[dict] = []
    while len(out) < limit and offset < log.high_watermark:
        data = log.read(offset, READ_BYTES)
        if not data:
            break
        last = offset
        for batch in decode_records(data):
            for record in getattr(batch, "records", ()) or ():
                at = record.offset if record.offset is not None else -1
                last = max(last, at)
                if at < offset or getattr(batch, "control", False) or record.control is not None:
                    continue
                if len(out) < limit:
                    out.append(record_row(record, mode))
            last = max(last, getattr(batch, "last_offset", last))
        if last < offset:
            break
        offset = last + 1
    return out


def record_row(record, mode: str = "auto") -> dict:
    return {"offset": record.offset, "timestamp": record.timestamp, "key": render(record.key, mode),
            "value": render(record.value, mode),
            "headers": [{"key": k, "value": render(v, mode)} for k, v in record.headers]}


def groups(state) -> list[dict]:
    """Every group the coordinator knows: state, kind, members with their assignments, and per committed
    partition the committed offset, the high watermark and the lag."""
    coordinator = state.groups
    return [group(state, group_id) for group_id in coordinator.known()]


def group(state, group_id: str) -> dict:
    coordinator = state.groups
    described = coordinator.describe(group_id)
    live = coordinator.groups.get(group_id)
    kind = coordinator.kind_of(group_id)
    members = []
    for m in described["members"]:
        assigned = _assignment(described, m, live)
        owner = getattr(live, "members", {}).get(m["member_id"]) if kind == "consumer" else None
        members.append({"member_id": m["member_id"], "client_id": m["client_id"], "client_host": m["client_host"],
                        "group_instance_id": m["group_instance_id"], "assignment": assigned,
                        # KIP-848: the member's epoch (the group epoch once it has caught up) and subscription
                        "epoch": owner.epoch if owner is not None else None,
                        "subscribed": sorted(owner.topic_names) if owner is not None else None})
    # a KIP-848 group names its server-side assignor where a classic group names its protocol
    protocol = live.assignor if kind == "consumer" and live is not None else described["protocol_data"]
    return {"group_id": group_id, "state": described["group_state"], "kind": kind, "protocol": protocol,
            "epoch": live.epoch if kind == "consumer" and live is not None else None,
            "members": members, "offsets": _lags(state, group_id)}


def _assignment(described: dict, member: dict, live: Any) -> list[str]:
    """``topic-partition`` names: a classic consumer member's assignment bytes decoded with the payload codec,
    a KIP-848 member's assignment as the coordinator keeps it."""
    if described["protocol_type"] == CONSUMER and member["member_assignment"]:
        try:
            decoded = decode_payload(ASSIGNMENT, member["member_assignment"])
        except ProtocolError:
            return []
        return [f"{t['topic']}-{p}" for t in decoded.get("assigned_partitions") or () for p in t["partitions"]]
    owner = getattr(live, "members", {}).get(member["member_id"])
    return [f"{t}-{p}" for t, p in sorted(getattr(owner, "assigned", ()) or ())]


def _lags(state, group_id: str) -> list[dict]:
    out = []
    for (topic, partition), committed in sorted(state.store.committed.get(group_id, {}).items()):
        found = state.store.partition(topic, partition)
        end = found.log.high_watermark if found is not None else None
        out.append({"topic": topic, "partition": partition, "committed": committed.offset,
                    "high_watermark": end, "lag": None if end is None else max(0, end - committed.offset)})
    return out
