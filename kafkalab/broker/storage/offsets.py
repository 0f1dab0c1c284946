"""``__consumer_offsets``: committed offsets and group metadata as records, in Kafka's own formats.

Owns: the internal topic's name and partition count, building its records (an OffsetCommitKey v1 +
OffsetCommitValue v3 per committed offset, a GroupMetadataKey v2 + GroupMetadataValue v3 per classic group
change, the KIP-848 records of key versions 3-8 (value v0) for consumer-protocol groups, a null value as the
tombstone of any of them) and reading them back on recovery. A transaction's offsets
(TxnOffsetCommit) are written as Kafka writes them: a transactional batch of the producer, which the
transaction's commit or abort marker closes; on recovery only committed ones count, and those of a transaction
still open are handed back so that the transaction coordinator can finish it. Must not know: group states,
requests, clocks (callers pass ``now_ms``). The topic is created on the first write, with one partition (Kafka
spreads groups over 50 by the group id's hash; one broker needs no spreading) and ``cleanup.policy=compact``,
so any client, and a notebook through kafkalab's decoders (:func:`kafkalab.protocol.payloads.decode_offsets_record`),
can read what the coordinator wrote.
"""
from __future__ import annotations

from typing import Iterator

from kafkalab.protocol import ProtocolError
from kafkalab.protocol.payloads import OFFSETS_RECORD_KINDS, decode_offsets_record, encode_payload
from kafkalab.protocol.records import RecordBatch, build_batch, decode_records, encode_records

from ..config import OFFSETS_TOPIC
from .log import COMMIT_MARKER

OFFSETS_PARTITIONS = 1
OFFSET_COMMIT_KEY_VERSION, OFFSET_COMMIT_VALUE_VERSION = 1, 3
GROUP_METADATA_KEY_VERSION, GROUP_METADATA_VALUE_VERSION = 2, 3
READ_CHUNK = 1 << 20


def offset_commit_record(group: str, topic: str, partition: int, committed) -> tuple[bytes, bytes | None]:
    """The (key, value) Kafka writes for one committed offset; ``committed`` None makes the tombstone."""
    key = encode_payload("offset_commit_key", {"version": OFFSET_COMMIT_KEY_VERSION, "group": group, "topic": topic,
                                               "partition": partition})
    if committed is None:
        return key, None
    value = encode_payload("offset_commit_value", {
        "version": OFFSET_COMMIT_VALUE_VERSION, "offset": committed.offset, "leader_epoch": committed.leader_epoch,
        "metadata": committed.metadata or "", "commit_timestamp": committed.commit_timestamp})
    return key, value


def group_metadata_record(group: str, value: dict | None) -> tuple[bytes, bytes | None]:
    """The (key, value) of a group's metadata: ``value`` holds GroupMetadataValue's fields, None deletes."""
    key = encode_payload("group_metadata_key", {"version": GROUP_METADATA_KEY_VERSION, "group": group})
    if value is None:
        return key, None
    return key, encode_payload("group_metadata_value", {"version": GROUP_METADATA_VALUE_VERSION, **value})


def consumer_group_record(key_version: int, group: str, member_id: str | None,
                          value: dict | None) -> tuple[bytes, bytes | None]:
    """The (key, value) of one KIP-848 group record: ``key_version`` (3-8) names the kind, ``member_id`` goes
    in the key of the per-member kinds (5, 7, 8), ``value`` holds the value's fields and None makes the tombstone."""
    _, key_schema, value_schema = OFFSETS_RECORD_KINDS[key_version]
    key = {"version": key_version, "group_id": group}
    if member_id is not None:
        key["member_id"] = member_id
    encoded_key = encode_payload(key_schema, key)
    return encoded_key, None if value is None else encode_payload(value_schema, {"version": 0, **value})


def append_records(partition, records: list[tuple[bytes, bytes | None]], now_ms: int, producer_id: int = -1,
                   producer_epoch: int = -1) -> None:
    """Append (key, value) pairs to the offsets partition as one uncompressed batch; with a producer id, a
    transactional batch of that producer (its transaction's marker decides whether the records count)."""
    if records:
        batch = build_batch(records, base_timestamp=now_ms, producer_id=producer_id, producer_epoch=producer_epoch,
                            transactional=producer_id >= 0)
        partition.log.append(encode_records([batch]))


def read_records(partition, still_open: dict[int, list[dict]] | None = None) -> Iterator[dict]:
    """Every record of the offsets partition that counts, decoded (``decode_offsets_record``'s dicts), oldest
    first: a transaction's records when its commit marker comes, never an aborted transaction's. Records of
    transactions with no marker yet go to ``still_open`` (producer id -> records). Records that do not decode
    (a future key kind) are skipped."""
    pending: dict[int, list[dict]] = {}
    yield from _counted_records(partition, pending)
    if still_open is not None:
        still_open.update(pending)


def _counted_records(partition, pending: dict[int, list[dict]]) -> Iterator[dict]:
    log = partition.log
    offset = log.log_start_offset
    while offset < log.next_offset:
        data = log.read(offset, READ_CHUNK)
        if not data:
            return
        for batch in decode_records(data):
            if not isinstance(batch, RecordBatch) or batch.partial:
                return
            if batch.control:
                closed = pending.pop(batch.producer_id, [])
                if batch.records and batch.records[0].control.type == COMMIT_MARKER:
                    yield from closed
            elif batch.transactional:
                pending.setdefault(batch.producer_id, []).extend(_decoded(batch))
            else:
                yield from _decoded(batch)
            offset = batch.last_offset + 1


def _decoded(batch) -> Iterator[dict]:
    for record in batch.records:
        try:
            yield decode_offsets_record(record.key, record.value)
        except ProtocolError:
            continue        # a record kind this broker does not write
