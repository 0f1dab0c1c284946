"""Produce (0), v0-v13: validate, check producer sequences, assign offsets, append; acks=0 gets no answer.

Per partition: unknown topic/partition, CORRUPT_MESSAGE (bad framing or CRC), INVALID_RECORD (a header
whose offset range and record count disagree, v8+; CORRUPT_MESSAGE before), MESSAGE_TOO_LARGE, and the
idempotence outcomes (duplicate -> the original base offset with no error; gap -> OUT_OF_ORDER_SEQUENCE_NUMBER;
old epoch -> INVALID_PRODUCER_EPOCH). Topics with ``message.timestamp.type=LogAppendTime`` get the broker's
time stamped into their batches and reported as ``log_append_time_ms``; CreateTime topics with
``message.timestamp.before/after.max.ms`` set reject batches outside that window with INVALID_TIMESTAMP. acks=-1
fsyncs file-backed logs, and gets NOT_ENOUGH_REPLICAS when the topic's ``min.insync.replicas`` exceeds the one
in-sync replica there is. v13 names topics by id. Transactional batches are verified with the transaction
coordinator (KIP-890): the partition must be in the producer's ongoing transaction (else INVALID_TXN_STATE) at
the current epoch (else INVALID_PRODUCER_EPOCH); control batches are the coordinator's alone (INVALID_RECORD),
and so are the internal topics (INVALID_TOPIC_EXCEPTION, as Kafka answers clients writing to them).
"""
from __future__ import annotations

import logging

from kafkalab.protocol import ApiKey, ErrorCode

from ..config import INTERNAL_TOPICS
from ..security.quotas import PRODUCER_BYTE_RATE
from ..storage import Duplicate
from ..storage.log import CONTROL, TRANSACTIONAL
from ..validate import Checked, check_record_set, needs_inflating, stamp_log_append_time, timestamps_within
from .base import Handler, Offload

log = logging.getLogger("kafkalab.broker")
IN_SYNC_REPLICAS = 1


def handle(ctx, body: dict):
    """Checks that inflate (legacy wrappers, "full" mode) run off the event loop as an :class:`Offload`, so
    one client's hostile wrapper does not stall the others; the rest is answered at once."""
    jobs = _check_jobs(ctx, body)
    mode = ctx.state.config.validate_records
    if not any(needs_inflating(job[0], mode) for job in jobs.values()):
        return _answer(ctx, body, {key: check_record_set(*job) for key, job in jobs.items()})
    return Offload(lambda: {key: check_record_set(*job) for key, job in jobs.items()},
                   lambda verdicts: _answer(ctx, body, verdicts))


def _check_jobs(ctx, body: dict) -> dict:
    """(topic index, partition index) -> the arguments of check_record_set, for every known partition."""
    state = ctx.state
    jobs = {}
    for ti, topic_data in enumerate(body.get("topic_data", ())):
        topic = _topic(ctx, topic_data)
        if topic is None:
            continue
        max_batch_bytes = state.produce_settings(topic).max_batch_bytes
        for pi, data in enumerate(topic_data.get("partition_data", ())):
            jobs[ti, pi] = (data.get("records"), max_batch_bytes, state.config.validate_records,
                            state.config.max_records_per_batch)
    return jobs


def _answer(ctx, body: dict, verdicts: dict) -> dict | None:
    touched: dict[int, object] = {}
    responses = []
    results: dict[tuple[str, int], dict] = {}
    acks = body.get("acks")
    transactional_id = body.get("transactional_id")
    if transactional_id is not None and not ctx.allowed("WRITE", "TRANSACTIONAL_ID", transactional_id):
        return _denied_everywhere(body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    for ti, topic_data in enumerate(body.get("topic_data", ())):
        topic = _topic(ctx, topic_data)
        denied = topic is not None and not ctx.allowed("WRITE", "TOPIC", topic.name)
        partitions = [_result(p["index"], ErrorCode.TOPIC_AUTHORIZATION_FAILED) if denied else
                      _guarded(ctx, topic, p, touched, acks, verdicts.get((ti, pi))) if topic is not None
                      else _result(p["index"], ErrorCode.UNKNOWN_TOPIC_ID if ctx.api_version >= 13
                                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                      for pi, p in enumerate(topic_data.get("partition_data", ()))]
        responses.append({"name": topic_data.get("name", ""), "topic_id": topic_data.get("topic_id"),
                          "partition_responses": partitions})
        if topic is not None:
            results.update(((topic.name, r["index"]), r) for r in partitions)
    if touched:
        if acks == -1:
            _flush(touched.values(), results)
        ctx.state.appended()
    throttle = ctx.throttle(PRODUCER_BYTE_RATE, sum(len(p.get("records") or b"") for t in body.get("topic_data", ())
                                                    for p in t.get("partition_data", ())))
    if acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": throttle}


def _denied_everywhere(body: dict, error: int) -> dict:
    return {"throttle_time_ms": 0, "responses": [
        {"name": t.get("name", ""), "topic_id": t.get("topic_id"),
         "partition_responses": [_result(p["index"], error) for p in t.get("partition_data", ())]}
        for t in body.get("topic_data", ())]}


def _flush(partitions, results: dict[tuple[str, int], dict]) -> None:
    """fsync for acks=-1; a partition whose fsync fails is answered KAFKA_STORAGE_ERROR (its records are
    written but not known durable), the others as they were."""
    for partition in partitions:
        try:
            partition.log.flush()
        except OSError as exc:
            log.error("fsync of %s-%d failed: %s", partition.topic, partition.index, exc)
            results[partition.topic, partition.index].update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, base_offset=-1,
                                                             error_message="fsync failed")


def _topic(ctx, topic_data: dict):
    store = ctx.state.store
    if ctx.api_version >= 13:
        return store.by_id.get(topic_data.get("topic_id"))
    return store.topic(topic_data.get("name"))


def _result(index: int, error: int, base_offset: int = -1, log_append_time: int = -1,
            log_start_offset: int = -1, message: str | None = None) -> dict:
    return {"index": index, "error_code": error, "base_offset": base_offset, "log_append_time_ms": log_append_time,
            "log_start_offset": log_start_offset, "record_errors": [], "error_message": message}


def _guarded(ctx, topic, data: dict, touched: dict, acks: int, verdict: Checked | None) -> dict:
    """One partition's result, whatever happens to it: out of disk or descriptors is KAFKA_STORAGE_ERROR, a
    bug UNKNOWN_SERVER_ERROR, and the other partitions of the request still get theirs."""
    try:
        return _produce_partition(ctx, topic, data, touched, acks, verdict)
    except OSError as exc:
        return _result(data["index"], ErrorCode.KAFKA_STORAGE_ERROR, message=str(exc))
    except Exception:  # noqa: BLE001 - one partition's failure must not hide the others' results
        log.exception("Produce to %s-%s failed", topic.name, data.get("index"))
        return _result(data["index"], ErrorCode.UNKNOWN_SERVER_ERROR,
                       message="the broker failed to store this partition")


def _produce_partition(ctx, topic, data: dict, touched: dict, acks: int, verdict: Checked | None) -> dict:
    index = data["index"]
    if not 0 <= index < len(topic.partitions):
        return _result(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if topic.name in INTERNAL_TOPICS:
        return _result(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
    partition = topic.partitions[index]
    log = partition.log
    state = ctx.state
    settings = state.produce_settings(topic)
    if settings.min_insync_replicas > IN_SYNC_REPLICAS and acks == -1:
        return _result(index, ErrorCode.NOT_ENOUGH_REPLICAS, log_start_offset=log.log_start_offset)
    records = data.get("records")
    if verdict is None:
        verdict = check_record_set(records, settings.max_batch_bytes, state.config.validate_records,
                                   max_records=state.config.max_records_per_batch)
    error, reason, batches, counts = verdict
    if error == ErrorCode.INVALID_RECORD and ctx.api_version < 8:
        error = ErrorCode.CORRUPT_MESSAGE             # INVALID_RECORD arrived with Produce v8 (KIP-467)
    if error:
        return _result(index, error, log_start_offset=log.log_start_offset, message=reason)
    if (settings.before_max_ms is not None or settings.after_max_ms is not None) and not settings.log_append_time \
            and not timestamps_within(records, ctx.now_ms, settings.before_max_ms, settings.after_max_ms):
        return _result(index, ErrorCode.INVALID_TIMESTAMP, log_start_offset=log.log_start_offset)
    for b in batches:
        if b.attributes & (TRANSACTIONAL | CONTROL):
            verdict = _transactional(state, topic.name, index, b)
            if verdict:
                return _result(index, verdict, log_start_offset=log.log_start_offset)
        verdict = partition.producers.check(b.producer_id, b.producer_epoch, b.first_sequence, b.last_sequence)
        if isinstance(verdict, Duplicate):
            return _result(index, ErrorCode.NONE, verdict.base_offset, log_start_offset=log.log_start_offset)
        if verdict:
            return _result(index, verdict, log_start_offset=log.log_start_offset)
    append_time = -1
    if settings.log_append_time:
        append_time = ctx.now_ms
        records = stamp_log_append_time(records, append_time)
    base = log.append(records, counts)
    offset = base
    for b in batches:
        partition.producers.record(b.producer_id, b.producer_epoch, b.first_sequence, b.last_sequence, offset)
        offset += b.last_sequence - b.first_sequence + 1
    touched[id(partition)] = partition
    return _result(index, ErrorCode.NONE, base, append_time, log.log_start_offset)


def _transactional(state, topic: str, index: int, batch) -> int:
    if batch.attributes & CONTROL:
        return ErrorCode.INVALID_RECORD
    return state.transactions.verify(batch.producer_id, batch.producer_epoch, topic, index)


HANDLER = Handler(ApiKey.PRODUCE, 0, 13, handle)
