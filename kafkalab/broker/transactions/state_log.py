"""``__transaction_state``: the coordinator's state as records in Kafka's format, and reading it back.

Owns: the internal topic (created on first use with Kafka's 50 partitions, the partition of a transactional
id chosen as Kafka chooses it), turning a :class:`~.machine.TransactionMetadata` into a TransactionLogKey /
TransactionLogValue record (the codec's payload schemas) and, on start-up, folding the stored records back
into the last value per transactional id. Must not know: requests, the state machine's rules, clocks.

Because the records are Kafka's, a notebook reads the coordinator's own log with kafkalab's decoders
(:func:`kafkalab.protocol.payloads.decode_transaction_record`), as it would a real cluster's.
"""
from __future__ import annotations

import logging

from kafkalab.protocol import ProtocolError
from kafkalab.protocol.payloads import decode_transaction_record, encode_payload
from kafkalab.protocol.records import build_batch, decode_records

from ..config import TRANSACTION_STATE_TOPIC as TOPIC
from .machine import TransactionMetadata, TxnState

log = logging.getLogger("kafkalab.broker")
PARTITIONS = 50                  # transaction.state.log.num.partitions
KEY_VERSION, VALUE_VERSION = 0, 0


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, partitions: int = PARTITIONS) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % partitions`` (abs of Integer.MIN_VALUE is 0 there)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def encode_key(transactional_id: str) -> bytes:
    return encode_payload("transaction_log_key", {"version": KEY_VERSION, "transactional_id": transactional_id})


def encode_value(meta: TransactionMetadata) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return encode_payload("transaction_log_value", {
        "version": VALUE_VERSION, "producer_id": meta.producer_id, "producer_epoch": meta.producer_epoch,
        "transaction_timeout_ms": meta.timeout_ms, "transaction_status": int(meta.state),
        "transaction_partitions": [{"topic": t, "partition_ids": ids} for t, ids in by_topic.items()],
        "transaction_last_update_timestamp_ms": meta.update_ms, "transaction_start_timestamp_ms": meta.start_ms})


def decode_value(transactional_id: str, value: dict) -> TransactionMetadata:
    """The metadata a TransactionLogValue describes; raises ValueError for a status Kafka does not define."""
    return TransactionMetadata(
        transactional_id, value["producer_id"], value["producer_epoch"], value["transaction_timeout_ms"],
        TxnState(value["transaction_status"]),
        {(t["topic"], p) for t in value["transaction_partitions"] or () for p in t["partition_ids"]},
        start_ms=value["transaction_start_timestamp_ms"], update_ms=value["transaction_last_update_timestamp_ms"])


class TransactionStateLog:
    """Appends state records to, and recovers them from, the ``__transaction_state`` topic of a BrokerState."""

    def __init__(self, state) -> None:
        self.state = state

    def _topic(self):
        topic = self.state.store.topic(TOPIC)
        return topic if topic is not None else self.state.create_topic(TOPIC, PARTITIONS)

    def write(self, meta: TransactionMetadata, now_ms: int) -> None:
        batch = build_batch([(encode_key(meta.transactional_id), encode_value(meta))], base_timestamp=now_ms)
        self._topic().partitions[partition_for(meta.transactional_id)].log.append(batch.raw)

    def load(self) -> dict[str, TransactionMetadata]:
        """{transactional id: the metadata of its last record}, tombstones dropping an id; records that do not
        decode are skipped with a warning."""
        found: dict[str, TransactionMetadata] = {}
        for index, record in self._records():
            try:
                decoded = decode_transaction_record(record.key, record.value)
                transactional_id = decoded["key"]["transactional_id"]
                meta = None if decoded["value"] is None else decode_value(transactional_id, decoded["value"])
            except (ProtocolError, ValueError):
                log.warning("%s-%d: skipping an undecodable record", TOPIC, index)
                continue
            if meta is None:
                found.pop(transactional_id, None)
            else:
                found[transactional_id] = meta
        return found

    def _records(self):
        topic = self.state.store.topic(TOPIC)
        for partition in (topic.partitions if topic is not None else ()):
            stored = partition.log
            for batch in decode_records(stored.read(stored.log_start_offset, 1 << 62)):
                for record in batch.records:
                    yield partition.index, record
