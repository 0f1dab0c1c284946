"""The broker's storage: topics, their partitions (logs + producer state) and committed group offsets.

Owns: topic names and ids, partition counts, topic configs, committed offsets and the last record of every
group key (a classic group's GroupMetadata, a KIP-848 group's records by key version and member; all kept in
the ``__consumer_offsets`` topic, see :mod:`.offsets`), and (with a data directory) their
persistence: ``topics.json`` (rewritten atomically on change) and one directory per partition
(``<topic>-<n>/`` holding segment files). Recovery rebuilds everything from those files, including
idempotent-producer state from the stored batch headers and committed offsets and group metadata by replaying
``__consumer_offsets``. Must not know: the wire protocol, clocks, sockets, group states. Later handlers
(DeleteTopics, CreatePartitions, AlterConfigs, DeleteRecords) use :meth:`delete_topic`, :meth:`add_partitions`,
:meth:`set_topic_configs` and :meth:`Partition.delete_before`; every committed offset goes through
:meth:`Store.commit`.
"""
from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field

from .log import PartitionLog
from .offsets import (OFFSETS_PARTITIONS, OFFSETS_TOPIC, append_records, consumer_group_record,
                      group_metadata_record, offset_commit_record, read_records)
from .producers import ProducerStates
from .segment import HandleCache


@dataclass
class Partition:
    topic: str
    index: int
    log: PartitionLog
    producers: ProducerStates = field(default_factory=ProducerStates)
    directory: str | None = None

    def delete_before(self, offset: int) -> int:
        """Advance the log start offset (DeleteRecords); returns the new low watermark."""
        offset = min(max(offset, self.log.log_start_offset), self.log.next_offset)
        self.log.log_start_offset = offset
        if self.directory is not None:
            _write_atomic(os.path.join(self.directory, "log-start-offset"), str(offset))
        self.log.drop_segments_before(offset)
        return offset


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)


@dataclass
class Committed:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    commit_timestamp: int = -1


class Store:
    def __init__(self, data_dir: str | None = None, segment_bytes: int = 64 * 1024 * 1024,
                 open_files: int = 256) -> None:
        self.data_dir = data_dir
        self.segment_bytes = segment_bytes
        self.handles = HandleCache(open_files)      # segment files open at once, all partitions together
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
        self.committed: dict[str, dict[tuple[str, int], Committed]] = {}
        self.open_txn_offsets: dict[int, dict[tuple[str, str, int], Committed]] = {}   # replayed, not yet ended
        self.group_records: dict[str, dict] = {}       # group id -> its last GroupMetadataValue (as a dict)
        # KIP-848 groups: group id -> {(key version 3-8, member id or None): the last value written (a dict)}
        self.consumer_group_records: dict[str, dict[tuple[int, str | None], dict]] = {}
        self.max_producer_id = -1
        self.broker_configs: dict[str, dict[str, str]] = {}     # dynamic broker configs by scope ("" = cluster)
        if data_dir is not None:
            os.makedirs(data_dir, exist_ok=True)
            self._recover()

    # --- topics ---------------------------------------------------------------------------------------

    def topic(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        return t.partitions[index] if t is not None and 0 <= index < len(t.partitions) else None

    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None,
                     topic_id: uuid.UUID | None = None) -> Topic:
        topic = Topic(name, topic_id or uuid.uuid4(), [], dict(configs or {}))
        self.topics[name] = topic
        self.by_id[topic.topic_id] = topic
        self._grow(topic, partitions)
        self._save_topics()
        return topic

    def add_partitions(self, name: str, total: int) -> None:
        self._grow(self.topics[name], total)
        self._save_topics()

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        self.topics[name].configs = dict(configs)
        self._save_topics()

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.pop(name)
        self.by_id.pop(topic.topic_id, None)
        for p in topic.partitions:
            p.log.close()
            if p.directory is not None:
                shutil.rmtree(p.directory, ignore_errors=True)
        if name != OFFSETS_TOPIC:       # as Kafka drops a deleted topic's committed offsets: tombstones
            gone = [(group, key) for group, kept in self.committed.items() for key in kept if key[0] == name]
            for group, (topic_name, index) in gone:
                self.delete_committed(group, topic_name, index)
        self._save_topics()
        return topic

    def set_broker_configs(self, scope: str, configs: dict[str, str]) -> None:
        """Replace the dynamic broker configs of ``scope`` (a node id, or "" for the cluster default)."""
        self.broker_configs[scope] = dict(configs)
        if self.data_dir is not None:
            _write_atomic(os.path.join(self.data_dir, "broker-configs.json"), json.dumps(self.broker_configs, indent=1))

    def _grow(self, topic: Topic, total: int) -> None:
        for index in range(len(topic.partitions), total):
            topic.partitions.append(self._open_partition(topic.name, index))

    def _open_partition(self, topic: str, index: int) -> Partition:
        if self.data_dir is None:
            return Partition(topic, index, PartitionLog.in_memory(self.segment_bytes))
        directory = os.path.join(self.data_dir, f"{topic}-{index}")
        partition = Partition(topic, index, PartitionLog.open(directory, self.segment_bytes, self.handles), directory=directory)
        for pid, epoch, first, last, base in partition.log.producer_batches():
            partition.producers.record(pid, epoch, first, last, base)
            self.max_producer_id = max(self.max_producer_id, pid)
        return partition

    # --- committed offsets and group metadata (__consumer_offsets) -------------------------------------------

    def commit(self, group: str, topic: str, partition: int, committed: Committed, written: bool = False) -> None:
        """THE way an offset is committed (OffsetCommit, TxnOffsetCommit...): kept, and written as a record
        unless it is ``written`` already (a transaction's, which its commit marker makes count)."""
        self.committed.setdefault(group, {})[(topic, partition)] = committed
        if not written:
            self._write_offsets([offset_commit_record(group, topic, partition, committed)],
                                committed.commit_timestamp)

    def stage_txn_offsets(self, producer_id: int, epoch: int, offsets: dict[tuple[str, str, int], Committed],
                          now_ms: int) -> None:
        """A transaction's offsets ((group, topic, partition) -> offset), written as the producer's transactional
        batch in :meth:`offsets_partition`, which the transaction's markers close."""
        records = [offset_commit_record(group, topic, partition, committed)
                   for (group, topic, partition), committed in sorted(offsets.items())]
        append_records(self._offsets_topic().partitions[0], records, now_ms, producer_id, epoch)

    def offsets_partition(self) -> tuple[str, int]:
        """The ``__consumer_offsets`` partition that holds every group's records (created on first use)."""
        self._offsets_topic()
        return OFFSETS_TOPIC, 0

    def fetch_committed(self, group: str, topic: str, partition: int) -> Committed | None:
        return self.committed.get(group, {}).get((topic, partition))

    def delete_committed(self, group: str, topic: str, partition: int, now_ms: int = -1) -> None:
        """Forget one committed offset (OffsetDelete, a deleted topic): a tombstone record."""
        kept = self.committed.get(group, {})
        if kept.pop((topic, partition), None) is not None:
            self._write_offsets([offset_commit_record(group, topic, partition, None)], now_ms)
        if not kept:
            self.committed.pop(group, None)

    def write_group(self, group: str, value: dict | None, now_ms: int = -1) -> None:
        """Record a group's metadata (GroupMetadataValue fields), or with None its deletion (a tombstone)."""
        if value is None:
            if self.group_records.pop(group, None) is None:
                return
        else:
            self.group_records[group] = value
        self._write_offsets([group_metadata_record(group, value)], now_ms)

    def write_consumer_group(self, group: str, changes: list[tuple[int, str | None, dict | None]],
                             now_ms: int = -1) -> None:
        """Record what changed in a KIP-848 group, as one batch of (key version, member id or None, value or
        None for a tombstone); :attr:`consumer_group_records` keeps the last value of every live key."""
        if not changes:
            return
        kept = self.consumer_group_records.setdefault(group, {})
        for key_version, member_id, value in changes:
            _keep(kept, (key_version, member_id), value)
        if not kept:
            del self.consumer_group_records[group]
        self._write_offsets([consumer_group_record(kind, group, member_id, value)
                            for kind, member_id, value in changes], now_ms)

    def _write_offsets(self, records: list, now_ms: int) -> None:
        append_records(self._offsets_topic().partitions[0], records, now_ms)

    def _offsets_topic(self) -> Topic:
        return self.topics.get(OFFSETS_TOPIC) or self.create_topic(OFFSETS_TOPIC, OFFSETS_PARTITIONS,
                                                                    {"cleanup.policy": "compact"})

    def _replay_offsets(self) -> None:
        topic = self.topics.get(OFFSETS_TOPIC)
        still_open: dict[int, list[dict]] = {}
        for partition in topic.partitions if topic else ():
            for record in read_records(partition, still_open):
                key, value = record["key"], record["value"]
                if record["key_type"] == "group_metadata":
                    self._replayed_group(key["group"], value)
                elif record["key_type"].startswith("consumer_group_"):
                    kept = self.consumer_group_records.setdefault(key["group_id"], {})
                    _keep(kept, (key["version"], key.get("member_id")),
                          None if value is None else {k: v for k, v in value.items() if k != "version"})
                    if not kept:
                        del self.consumer_group_records[key["group_id"]]
                else:
                    self._replayed_offset(key["group"], key["topic"], key["partition"], value)
        self.open_txn_offsets = {pid: {(r["key"]["group"], r["key"]["topic"], r["key"]["partition"]):
                                       _committed(r["value"]) for r in records if r["key_type"] == "offset_commit"}
                                 for pid, records in still_open.items()}

    def _replayed_group(self, group: str, value: dict | None) -> None:
        if value is None:
            self.group_records.pop(group, None)
        else:
            self.group_records[group] = {k: v for k, v in value.items() if k != "version"}

    def _replayed_offset(self, group: str, topic: str, partition: int, value: dict | None) -> None:
        kept = self.committed.setdefault(group, {})
        if value is None:
            kept.pop((topic, partition), None)
        else:
            kept[(topic, partition)] = _committed(value)
        if not kept:
            del self.committed[group]

    # --- persistence ----------------------------------------------------------------------------------

    def close(self) -> None:
        for topic in self.topics.values():
            for p in topic.partitions:
                p.log.close()

    def _save_topics(self) -> None:
        if self.data_dir is None:
            return
        data = {name: {"topic_id": str(t.topic_id), "partitions": len(t.partitions), "configs": t.configs}
                for name, t in self.topics.items()}
        _write_atomic(os.path.join(self.data_dir, "topics.json"), json.dumps(data, indent=1))

    def _recover(self) -> None:
        path = os.path.join(self.data_dir, "topics.json")
        if os.path.exists(path):
            with open(path) as f:
                saved = json.load(f)
            for name, info in saved.items():
                topic = Topic(name, uuid.UUID(info["topic_id"]), [], info.get("configs", {}))
                self.topics[name] = topic
                self.by_id[topic.topic_id] = topic
                self._grow(topic, info["partitions"])
        dynamic = os.path.join(self.data_dir, "broker-configs.json")
        if os.path.exists(dynamic):
            with open(dynamic) as f:
                self.broker_configs = json.load(f)
        self._replay_offsets()


def _keep(kept: dict, key, value: dict | None) -> None:
    if value is None:
        kept.pop(key, None)
    else:
        kept[key] = value


def _committed(value: dict) -> Committed:
    return Committed(value["offset"], value.get("leader_epoch", -1), value["metadata"], value["commit_timestamp"])


def _write_atomic(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
