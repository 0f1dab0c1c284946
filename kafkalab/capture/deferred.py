"""The describing that waits: Produce requests and paired Produce and Fetch responses the rows stage
(:mod:`.bulk`) cuts and pairs but leaves undescribed until the frames table, a row or a Frame is asked for
(the records table never needs them described: see :meth:`.frame_store.FrameStore.defer`). They are most of
a capture's bytes; a read that only wants records (or exchanges' timing) skips decoding their bodies twice.

Owns: which frames may wait (:func:`deferrable`, :func:`waiting_request`) and their describing, all at once
when first needed (:func:`describe_deferred`), into the same values the rows stage would have given them.
"""
from __future__ import annotations

from functools import lru_cache

from kafkalab.dissect import decoding
from kafkalab.dissect.facts import uses_topic_ids
from kafkalab.dissect.frame import describe, describe_body
from kafkalab.dissect.records_table import APIS as RECORDS_APIS
from kafkalab.dissect.repeats import MEMO_BYTES, Repeats
from kafkalab.protocol import ApiKey
from kafkalab.protocol.schema.registry import message_spec
from kafkalab.protocol.wire import WireError, read_int16, read_length_compact, read_length_int16

from .session import _KEEP_MESSAGES


@lru_cache(maxsize=None)
def deferrable(api_key: int, version: int) -> bool:
    """Whether a paired response's describing may wait: a Produce or Fetch response (the frames the records
    table reads, and most of a capture's bytes) of a version without topic ids, whose description is the
    same whatever the capture said before and teaches nothing to the frames after it (see
    :func:`~kafkalab.dissect.facts.uses_topic_ids`), so describing it later gives what describing it in
    the read would have."""
    return api_key in RECORDS_APIS and not uses_topic_ids(api_key, "response", version)


PRODUCE = int(ApiKey.PRODUCE)
_PRODUCE_KEY = PRODUCE.to_bytes(2, "big")       # a request's API key, as its header holds it


@lru_cache(maxsize=None)
def _before_acks(version: int) -> tuple | None:
    """How a Produce request body at ``version`` reaches its ``acks`` (what :func:`waiting_request` reads):
    (the reader of a string's length, plain or compact, the number of string fields before it), from the
    message's schema; None where anything else comes first or the version has topic ids (its description
    depends on the topic names learnt so far)."""
    if uses_topic_ids(PRODUCE, "request", version):
        return None
    try:
        spec = message_spec(PRODUCE, "request", version)
    except (KeyError, ValueError):
        return None
    strings = 0
    for field in spec.fields:
        if field.name == "acks":
            return (read_length_compact if spec.is_flexible(version) else read_length_int16), strings
        if not (field.versions[0] <= version <= field.versions[1]):
            continue
        if field.type != "string" or field.tagged:
            return None
        strings += 1
    return None


WAITING_HEAD = 256      # the bytes read of a request to tell whether it waits (its header, up to acks)
#: the shortest request that waits: a small one costs less to describe now (often from the memo, see
#: kafkalab.dissect.repeats) than to read back later (a chatty capture's 1.5 kB Produce requests: 2% slower)
WAITING_BYTES = 4096


def may_wait(frame_length: int) -> bool:
    """Whether a request this long may wait at all (see :func:`waiting_request`): asked first, so that a
    short one's head is never cut out to be looked at."""
    return frame_length >= WAITING_BYTES


def waiting_request(head: bytes, frame_length: int) -> tuple | None:
    """(api_key, api_version, correlation_id, client_id) of a request whose describing may wait: a Produce
    request (see :func:`may_wait`) of a version without topic ids, with a usual header (see
    :func:`kafkalab.dissect.decoding.request_head`) and acks other than 0, so that it expects a response
    whatever its body holds (see :func:`kafkalab.protocol.correlation.expects_response`: the rows stage pairs
    by that before describing). ``head`` is the frame's first ``WAITING_HEAD`` bytes (all of it if shorter),
    so that the frame itself is never copied out of the file. None for any other frame, and where ``head``
    ends before acks: the rows stage describes it at once."""
    if not may_wait(frame_length) or head[4:6] != _PRODUCE_KEY:        # the common refusals first
        return None
    parsed = decoding.request_head(head, frame_length)
    if parsed is None:
        return None
    api_key, version, correlation_id, client_id, pos, _ = parsed
    way = _before_acks(version)
    if way is None:
        return None
    read_length, strings = way
    try:
        for _ in range(strings):                # nullable strings: null is a length of -1
            length, pos = read_length(head, pos)
            pos += max(length, 0)
        acks, _ = read_int16(head, pos)
    except WireError:
        return None
    return None if acks == 0 else (api_key, version, correlation_id, client_id)


def describe_deferred(indexes: list[int], read, columns: dict, extras: dict) -> None:
    """Fill the described columns (frames table names -> lists, as :class:`.frame_store.FrameStore` holds
    them) of the deferred requests and responses at row ``indexes``, whose bytes ``read(index)`` gives, and
    ``extras`` (index -> (kept message, topic ids) where either is set). Frames seen before (see
    :mod:`kafkalab.dissect.repeats`, one memo for all of them) are described straight into the columns; the
    others by :func:`describe_request` or :func:`describe_response`."""
    repeats = Repeats()
    seen_response = repeats.response
    no_notes: list = []                         # and its rows' empty diagnostics
    api_keys, versions, kinds = columns["api_key"], columns["api_version"], columns["kind"]
    names, correlation_ids, sizes, codes, errors, topics, record_counts, summaries, diagnostics = (
        columns["api_name"], columns["correlation_id"], columns["size"], columns["error_code"],
        columns["error"], columns["topics"], columns["record_count"], columns["summary"],
        columns["diagnostics"])
    for i in indexes:
        raw = read(i)
        api_key, version = api_keys[i], versions[i]
        if kinds[i] == "request":
            seen = repeats.request(raw)
            if seen is not None:
                (_, names[i], _, codes[i], errors[i], topics[i], record_counts[i], summaries[i], _, _, _,
                 _) = seen
                diagnostics[i] = no_notes
                continue
            (names[i], codes[i], errors[i], topics[i], record_counts[i], summaries[i], diagnostics[i], topic_ids,
             message) = describe_request(raw, repeats)
            if message is not None or topic_ids is not None:
                extras[i] = (message, topic_ids)
            continue
        seen = seen_response(raw, api_key, version)
        if seen is not None:
            (_, names[i], _, codes[i], errors[i], topics[i], record_counts[i], summaries[i], _, correlation_ids[i],
             _, sizes[i]) = seen
            diagnostics[i] = no_notes
            continue
        (names[i], correlation_ids[i], sizes[i], codes[i], errors[i], topics[i], record_counts[i], summaries[i],
         diagnostics[i], topic_ids, message) = describe_response(raw, api_key, version, repeats)
        if message is not None or topic_ids is not None:
            extras[i] = (message, topic_ids)


def describe_request(raw: bytes, repeats: Repeats) -> tuple:
    """The described values of a request whose describing was deferred (see :func:`waiting_request`), as the
    rows stage describes one: (api_name, error_code, error, topics, record_count, summary, diagnostics,
    topic_ids, message kept or None), for a request ``repeats`` (the descriptions remembered so far) does not
    know; remembered there where it may be."""
    parts = decoding.request_parts(raw)
    if parts is not None:
        api_key, api_name, version, _, _, body, size, _, _ = parts
        topics, code, error, records, notes, summary, topic_ids = describe_body(
            api_key, api_name, version, "request", body, None, None)
        if size <= MEMO_BYTES or records:
            repeats.remember_request(raw, (api_key, api_name, version, code, error, tuple(topics), records, summary,
                                           True), notes)
        return api_name, code, error, topics, records, summary, notes, topic_ids, None
    message = decoding.request(raw)
    keep = message.api_key in _KEEP_MESSAGES or message.body is None
    topics, code, error, records, notes, summary, topic_ids = describe(message, None, not keep)
    return message.api_name, code, error, topics, records, summary, notes, topic_ids, message if keep else None


def describe_response(raw: bytes, api_key: int, version: int, repeats: Repeats | None = None) -> tuple:
    """The described values of a paired response whose describing was deferred (see :func:`deferrable`) and
    which ``repeats`` (the descriptions remembered so far, see :mod:`kafkalab.dissect.repeats`) does not
    know, as the rows stage describes one: (api_name, correlation_id, size, error_code, error, topics,
    record_count, summary, diagnostics, topic_ids, message kept or None). Remembered in ``repeats`` where
    it may be."""
    parts = decoding.response_parts(raw, api_key, version)
    if parts is not None:
        api_name, correlation_id, body, size, _, _ = parts
        message, keep = None, False
        topics, code, error, records, notes, summary, topic_ids = describe_body(
            api_key, api_name, version, "response", body, None, None)
        if repeats is not None and (size <= MEMO_BYTES or records):
            repeats.remember_response(raw, (api_key, api_name, version, code, error, tuple(topics), records,
                                            summary, True), notes)
    else:
        message = decoding.response(raw, api_key, version)
        correlation_id, api_name, body, size = message.correlation_id, message.api_name, message.body, message.size
        keep = api_key in _KEEP_MESSAGES or body is None
        topics, code, error, records, notes, summary, topic_ids = describe(message, None, not keep)
    return (api_name, correlation_id, size, code, error, topics, records, summary, notes, topic_ids,
            message if keep else None)
