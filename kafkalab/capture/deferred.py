"""The describing that waits: paired Produce and Fetch responses the rows stage (:mod:`.bulk`) cuts and pairs
but leaves undescribed until the frames table, a row or a Frame is asked for (the records table never needs
them described: see :meth:`.frame_store.FrameStore.defer`).

Owns: which responses may wait (:func:`deferrable`) and their describing, all at once when first needed
(:func:`describe_deferred`), into the same values the rows stage would have given them.
"""
from __future__ import annotations

from functools import lru_cache

from kafkalab.dissect import decoding
from kafkalab.dissect.facts import uses_topic_ids
from kafkalab.dissect.frame import describe, describe_body
from kafkalab.dissect.records_table import APIS as RECORDS_APIS
from kafkalab.dissect.repeats import MEMO_BYTES, Repeats

from .session import _KEEP_MESSAGES


@lru_cache(maxsize=None)
def deferrable(api_key: int, version: int) -> bool:
    """Whether a paired response's describing may wait: a Produce or Fetch response (the frames the records
    table reads, and most of a capture's bytes) of a version without topic ids, whose description is the
    same whatever the capture said before and teaches nothing to the frames after it (see
    :func:`~kafkalab.dissect.facts.uses_topic_ids`), so describing it later gives what describing it in
    the read would have."""
    return api_key in RECORDS_APIS and not uses_topic_ids(api_key, "response", version)


def describe_deferred(indexes: list[int], read, columns: dict, extras: dict) -> None:
    """Fill the described columns (frames table names -> lists, as :class:`.frame_store.FrameStore` holds
    them) of the deferred responses at row ``indexes``, whose bytes ``read(index)`` gives, and ``extras``
    (index -> (kept message, topic ids) where either is set). Responses seen before (see
    :mod:`kafkalab.dissect.repeats`, one memo for all of them) are described straight into the columns; the
    others by :func:`describe_response`."""
    repeats = Repeats()
    seen_response = repeats.response
    no_notes: list = []                         # and its rows' empty diagnostics
    api_keys, versions = columns["api_key"], columns["api_version"]
    names, correlation_ids, sizes, codes, errors, topics, record_counts, summaries, diagnostics = (
        columns["api_name"], columns["correlation_id"], columns["size"], columns["error_code"],
        columns["error"], columns["topics"], columns["record_count"], columns["summary"],
        columns["diagnostics"])
    for i in indexes:
        raw = read(i)
        api_key, version = api_keys[i], versions[i]
        seen = seen_response(raw, api_key, version)
        if seen is not None:
            (_, names[i], _, codes[i], errors[i], seen_topics, record_counts[i], summaries[i], _, correlation_ids[i],
             _, sizes[i]) = seen
            topics[i], diagnostics[i] = repeats.topics_list(seen_topics), no_notes
            continue
        (names[i], correlation_ids[i], sizes[i], codes[i], errors[i], topics[i], record_counts[i], summaries[i],
         diagnostics[i], topic_ids, message) = describe_response(raw, api_key, version, repeats)
        if message is not None or topic_ids is not None:
            extras[i] = (message, topic_ids)


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
