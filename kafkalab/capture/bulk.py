"""The frames → exchanges → rows stage of the capture engine (see :mod:`.engine`), and ``read_bulk``.

Owns: :func:`_decode`, which takes the engine's events in packet order, window by window: a regular
connection's frame (cut in bulk by :mod:`.streams`) is decoded and paired here, straight into the frames
table's columns (no Frame object is made); an irregular connection's packet goes to an
:class:`~.analyzer.Analyzer` (the general path), which numbers its streams and frames within the same
sequence, so the two kinds interleave exactly as in a single general run. At each window's end it gives the
rows made so far to its reader: :func:`read_bulk` keeps them all (a :class:`FrameStore`: the frames table,
each frame's place in the file and the few objects that cannot be made again; Frame objects are made on
first access), :class:`.engine.FrameStream` turns them into Frames and lets them go. :func:`read_bulk`
also leaves large Produce requests and most Produce and Fetch responses undescribed (not even copied out of
the file: of a request, only its header is read) until the frames table, a row or a Frame is asked for (see
:mod:`.deferred`): the records table never needs them described.

When the engine declines a file (gzip, a file object, IPv6 or VLAN-tagged TCP, IP fragments, a damaged
file, a connection reusing a 5-tuple), :func:`read_bulk` returns None and the general pipeline reads the
file, so nothing here ever has to be right about those cases.
"""
from __future__ import annotations

import socket
from array import array
from itertools import chain
from typing import Iterable

from kafkalab.dissect import decoding
from kafkalab.dissect.columns import latency_ms
from kafkalab.dissect.frame import describe, describe_body
from kafkalab.dissect.repeats import MEMO_BYTES, Repeats
from kafkalab.pcap import TcpPacket
from kafkalab.protocol.correlation import API_VERSIONS, advertised_ranges, expects_response

from .analyzer import Analyzer
from .deferred import WAITING_HEAD, deferrable, describe_deferred, may_wait, waiting_request
from .engine import WINDOW_END, Bail, mapped, plan, window_events
from .frame_store import (PAIRING, R_INFERRED, R_LATENCY, R_OFFSET, R_REQUEST_FRAME, R_RESPONSE_FRAME, FileBytes,
                          FrameStore, HeldBytes)
from .session import _KEEP_MESSAGES, unpaired_response
from .segments import span_bytes, span_head, span_length, span_prefix
from .streams import CORRELATION, REQUEST_HEAD, Conn, Waiting



def read_bulk(source, ports: Iterable[int] | None = None):
    """A :class:`~.capture.Capture` of ``source`` (a pcap or pcapng path) read by the engine (see
    :mod:`.engine`), or None when the general pipeline must read it. Nothing keeps the file's map after the
    read: frames' bytes are read back from the file when asked for (see FileBytes, which notices a change)."""
    data = mapped(source)
    if data is None:
        return None
    try:
        return _read(data, ports, source, defer=True)
    except Bail:
        return None


def read_index(index, data, ports: Iterable[int] | None):
    """The :class:`~.capture.Capture` of the packets of a :class:`~kafkalab.pcap.index.PacketIndex` whose
    payloads are in ``data`` (any buffer: a distributed reader's payloads of one group of connections), read
    by the same stages as a file, as one window; raises :class:`Bail` where the general pipeline must read
    them."""
    return _read(data, ports, None, [index])


def _read(data, ports: Iterable[int] | None, path, indexes: list | None = None, defer: bool = False):
    from .analyzer import DEFAULT_PORTS
    from .capture import Capture, connection_row

    kafka_ports = DEFAULT_PORTS | frozenset(ports or ())
    try:        # each request's header read once: the decoding applies pass 1's rule on responses
        conns, packets, decoded = _rows(data, kafka_ports, indexes, defer, path is not None, answers=False)
    except _Stray:      # a connection for the general path: pass 1 finds which, as the streaming reader's does
        conns, packets, decoded = _rows(data, kafka_ports, indexes, defer, path is not None, answers=True)
    row_columns, objects, extras, analyzer, deferred, places = decoded
    analyzer.packet_count = packets
    store = FrameStore(row_columns, objects, extras)
    store.raw = FileBytes(path, store.raw, places) if path is not None else HeldBytes(data, store.raw)
    if deferred:
        store.defer(deferred, describe_deferred)
    del row_columns
    connections = [connection_row(c, c.client, 1 - c.client, c.requests, c.responses, c.client_ids)
                   for c in conns if not c.irregular]
    return Capture(store, analyzer, analyzer.diagnostics, connections=connections, packets=packets,
                   streams=len(conns))


class _Stray(Exception):
    """A connection pass 1 found regular without its rule on responses (see :class:`.streams.Waiting`) has
    a response that answers none of its requests (or a request header the rule reads otherwise)."""


def _rows(data, kafka_ports: frozenset, indexes: list | None, defer: bool, placed: bool, answers: bool) -> tuple:
    """Both passes of a whole read: (connections, TCP packets, what :func:`_decode` returns). ``answers``:
    pass 1 applies the rule on responses, else the decoding does (raising :class:`_Stray` where it fails);
    ``placed``: see :func:`_decode`."""
    conns, windows, packets = plan(data, kafka_ports, keep=True, indexes=indexes, answers=answers)
    columns, packet_conn = [[] for _ in range(11)], []
    events = window_events(data, conns, kafka_ports, windows, columns, packet_conn)
    decoder = _decode(data, columns, conns, packet_conn, events, kafka_ports, whole=True, defer=defer,
                      checked=answers, placed=placed)
    next(decoder)
    try:
        while True:
            next(decoder)
    except StopIteration as done:
        return conns, packets, done.value


def _decode(data: bytes, columns: list, conns: list[Conn], packet_conn: list[Conn], events: Iterable,
            kafka_ports: frozenset, whole: bool = True, defer: bool = False, checked: bool = True,
            placed: bool = False):
    """Pass 2, in packet order: regular frames decoded and paired; other connections' packets to an
    Analyzer; one frame numbering for both.

    A generator: it first yields (row columns, objects, extras, pairs, inferred_at, analyzer), the
    containers it fills (the row columns: one list per field of the row layout, R_FRAME to R_OFFSET, the
    pairing ones, see :data:`.frame_store.PAIRING`, left empty), then the row count at each window's end
    (a streaming reader takes the rows and clears the columns).
    With ``defer``, the paired Produce and Fetch responses whose description cannot depend on the capture's
    topic names (see :func:`.deferred.deferrable`), and the Produce requests that expect a response and whose
    description cannot depend on them either (see :func:`.deferred.waiting_request`), are cut and paired but
    not decoded nor described (only the requests' headers and acks are read): their described columns stay
    None, to be filled by :func:`.deferred.describe_deferred` when something asks for them (see
    :meth:`FrameStore.defer`); the records table reads their bytes itself and never needs them.
    With ``whole`` it returns (row columns, objects, extras, analyzer, deferred row indexes, places): the
    frames table's values column by column (the row layout, R_FRAME to R_OFFSET, each value appended to its
    column as the frame is made: no tuple per frame to take apart again), the general pipeline's Frame
    objects by index (their column values are placeholders until :class:`FrameStore` fills them in),
    index -> (kept message, topic ids) where either is set, and each row's place as two arrays (start, end;
    -1 where the frame is not one range of the file, see :class:`FileBytes`), noted as the frames are cut
    for less than packing them from the places afterwards.
    ``checked``: pass 1 applied the rule that a regular connection's every response answers a waiting
    request; else this pass applies it as it pairs (:class:`.streams.Waiting`, from the headers it reads
    anyway) and raises :class:`_Stray` where it fails. ``placed``: the rows' bytes will be read back by
    their places (see :class:`FileBytes`), so a frame that is one range of the file has no entry of its own
    in the row layout's raw column (None there: no tuple per frame)."""
    src_ips, sports, dst_ips, dports, seqs, acks, flagss, starts, lengths, numbers, ts_ns = columns
    analyzer = Analyzer(kafka_ports)
    host_requests = analyzer._host_requests
    topic_names = analyzer.topic_names
    names: dict[int, str] = {}
    row_columns: list[list] = [[] for _ in range(R_OFFSET + 1)]   # the row layout, a list per field
    filled = [column for k, column in enumerate(row_columns) if k not in PAIRING]    # pairing: at the end
    (add_frame, add_stream, add_src, add_dst, add_kind, add_api_key, add_api_name, add_version, add_correlation,
     add_client_id, add_size, add_code, add_error, add_topics, add_records, add_summary, add_notes, add_ts, add_raw,
     add_offset) = [column.append for column in filled]
    place_starts, place_ends = array("q"), array("q")   # each row's place (see FileBytes) for a whole read
    add_start, add_end = place_starts.append, place_ends.append
    objects: dict[int, object] = {}
    extras: dict[int, tuple] = {}
    pairs: list[tuple] = []                     # (request index, response index, latency)
    inferred_at: list[int] = []
    deferred: list[int] = []                    # rows whose describing waits (see ``defer``)
    latencies: dict[float, float] = {}          # seconds between request and response -> latency_ms
    no_notes: list = []                         # the diagnostics of every row described by a memo: one list
    count = 0
    index = 0                                   # next row
    request, request_parts = decoding.request, decoding.request_parts
    response, response_parts = decoding.response, decoding.response_parts
    unpack_from = CORRELATION.unpack_from
    from kafkalab.pcap.index import WINDOW, release

    view = memoryview(data)
    let_go = WINDOW
    repeats = Repeats()                         # frames seen before (see kafkalab.dissect.repeats)
    seen_request, seen_response = repeats.request, repeats.response
    remember_request, remember_response = repeats.remember_request, repeats.remember_response
    sessions, given_up = analyzer.sessions, set()    # irregular connections the analyzer found not Kafka
    if not checked:                             # pass 1 left the rule on responses to this pass (see _rows)
        for conn in conns:
            conn.waiting = Waiting()
    yield row_columns, objects, extras, pairs, inferred_at, analyzer
    for frame in chain.from_iterable(events):   # each window's events, then WINDOW_END (see window_events)
        if frame is WINDOW_END:                 # rows so far: a streaming reader takes them now
            yield index
            if not whole:                       # the reader took the window's rows and their places
                del place_starts[:], place_ends[:]
            continue
        if frame.__class__ is int:              # a packet of an irregular connection
            i = frame
            conn = packet_conn[i]
            if conn.index in given_up:          # found not to be Kafka: nothing more to look at
                continue
            s, d = src_ips[i], dst_ips[i]
            start = starts[i]
            packet = TcpPacket(numbers[i], ts_ns[i], _ip_name(s, names), sports[i], _ip_name(d, names), dports[i],
                               seqs[i], acks[i], flagss[i], data[start:start + lengths[i]], [])
            analyzer.next_stream = conn.index
            analyzer.frame_count = count
            for made in analyzer.feed(packet):
                objects[index] = made
                index += 1
                for column in filled:           # placeholders: FrameStore fills them from the object
                    column.append(None)
                add_start(-1)
                add_end(-1)
            count = analyzer.frame_count
            if sessions[conn.index].kafka is False:
                given_up.add(conn.index)
            continue
        if len(frame) == 6:
            i, conn, side, offset, start, end = frame
            raw = data[start:end] if not defer else None        # None: copied when needed (see below)
            where = None if placed else (start, end)
            add_start(start)
            add_end(end)
            if start > let_go:                  # the pages read so far are let go (see pcap.index.release)
                release(data, start)
                let_go = start + WINDOW
        else:
            i, conn, side, offset, _, _, where = frame
            start = -1                          # not one range: its bytes are at ``where``
            raw = span_bytes(view, where) if not defer else None
            add_start(-1)
            add_end(-1)
        ts = ts_ns[i] / 1e9
        count += 1
        if side == conn.client:
            waits = None
            if raw is None:                     # its header first: a request that waits is never copied
                length = end - start if start >= 0 else span_length(where)
                if may_wait(length):
                    waits = waiting_request(data[start:start + WAITING_HEAD] if start >= 0 else
                                            span_prefix(view, where, WAITING_HEAD), length)
                if waits is None:
                    raw = data[start:end] if start >= 0 else span_bytes(view, where)
            if waits is not None:               # described when asked (see .deferred)
                api_key, version, correlation_id, client_id = waits
                api_name = code = error = topics = records = summary = notes = topic_ids = None
                message, keep, answered, size = None, False, True, length - 4
                deferred.append(index)
            elif (seen := seen_request(raw)) is not None:      # described as a request seen before (but for offsets...)
                (api_key, api_name, version, code, error, topics, records, summary, answered, correlation_id,
                 client_id, size) = seen              # topics: the memo's one list (see repeats.DESCRIPTION)
                notes, message, keep, topic_ids = no_notes, None, False, None
            elif (parts := request_parts(raw)) is not None:     # the usual case: no Request object made
                api_key, api_name, version, correlation_id, client_id, body, size, _, _ = parts
                message, keep = None, False
                topics, code, error, records, notes, summary, topic_ids = describe_body(
                    api_key, api_name, version, "request", body, None, topic_names)
                answered = expects_response(api_key, body)
                if size <= MEMO_BYTES or records:       # small enough, or carrying records (see Repeats)
                    remember_request(raw, (api_key, api_name, version, code, error, tuple(topics), records, summary,
                                           answered), notes)
            else:
                message = request(raw)
                api_key, version, correlation_id = message.api_key, message.api_version, message.correlation_id
                api_name, client_id, body, size = message.api_name, message.client_id, message.body, message.size
                keep = api_key in _KEEP_MESSAGES or body is None
                topics, code, error, records, notes, summary, topic_ids = describe(message, topic_names, not keep)
                answered = expects_response(api_key, body)
                if not checked and (len(raw) < 12 or REQUEST_HEAD.unpack_from(raw, 4) != (api_key, version,
                                                                                        correlation_id)):
                    raise _Stray            # read otherwise than the rule reads it: pass 1 decides
            kind = "request"
            conn.requests += 1
            if conn.asked.request(api_key, version, correlation_id, answered,
                                  (index, count, api_key, version, client_id, ts)):
                if not checked:
                    conn.waiting.asked(correlation_id)
                pair = (api_key, version)
                host = conn.host
                if host is None:                # the capture-wide dict of the client's host (never replaced)
                    host = host_requests.get(conn.client_ip)
                    if host is None:
                        host = host_requests[conn.client_ip] = {}
                    conn.host = host
                host[pair] = None
            if client_id and client_id not in conn.client_ids:
                conn.client_ids.append(client_id)
        else:
            if raw is not None:
                correlation_id = unpack_from(raw, 4)[0] if len(raw) >= 8 else -1
            elif start >= 0:
                correlation_id = unpack_from(data, start + 4)[0] if end - start >= 8 else -1
            else:
                correlation_id = _correlation_id(data, where)
            asked = conn.asked.response(correlation_id)
            if not checked and not conn.waiting.answers(correlation_id):
                raise _Stray
            if raw is None and (asked is None or not deferrable(asked[2], asked[3])):
                raw = data[start:end] if start >= 0 else span_bytes(view, where)
            inferred = False
            parts = None
            if asked is not None:
                api_key, version, client_id = asked[2], asked[3], asked[4]
                seen = seen_response(raw, api_key, version) if raw is not None else None
                if seen is not None:
                    parts = True
                    _, api_name, _, code, error, topics, records, summary, _, _, _, size = seen
                    notes, message, keep, topic_ids = no_notes, None, False, None
                elif raw is None:               # deferred: described when asked (see .deferred)
                    parts = True
                    api_name = size = code = error = topics = records = summary = notes = topic_ids = None
                    message, keep = None, False
                    deferred.append(index)
                elif (parts := response_parts(raw, api_key, version)) is not None:  # no Response object made
                    api_name, correlation_id, body, size, _, _ = parts
                    message, keep = None, False
                    topics, code, error, records, notes, summary, topic_ids = describe_body(
                        api_key, api_name, version, "response", body, None, topic_names)
                    if size <= MEMO_BYTES or records:
                        remember_response(raw, (api_key, api_name, version, code, error, tuple(topics), records,
                                                summary, True), notes)
                else:
                    message = response(raw, api_key, version)
            else:
                message, inferred = unpaired_response(raw, correlation_id, conn.asked.pairs, conn.advertised,
                                                      host_requests.get(conn.client_ip, {}))
                client_id = None
            if parts is None:
                api_key, version, correlation_id = message.api_key, message.api_version, message.correlation_id
                api_name, body, size = message.api_name, message.body, message.size
                keep = inferred or api_key in _KEEP_MESSAGES or body is None
                topics, code, error, records, notes, summary, topic_ids = describe(message, topic_names, not keep)
            kind = "response"
            conn.responses += 1
            if asked is not None:
                # round() is slow and latencies repeat (timestamps have a resolution): remember its results
                elapsed = ts - asked[5]
                latency = latencies.get(elapsed)
                if latency is None:
                    latency = latency_ms(elapsed)
                    if len(latencies) < 65536:
                        latencies[elapsed] = latency
                pairs.append((asked[0], index, asked[1], count, latency))
            if inferred:
                inferred_at.append(index)
            if api_key == API_VERSIONS and body:
                conn.advertised.extend(advertised_ranges(body))
        ends = conn.names
        add_frame(count)
        add_stream(conn.index)
        add_src(ends[side])
        add_dst(ends[1 - side])
        add_kind(kind)
        add_api_key(api_key)
        add_api_name(api_name)
        add_version(version)
        add_correlation(correlation_id)
        add_client_id(client_id)
        add_size(size)
        add_code(code)
        add_error(error)
        add_topics(topics)
        add_records(records)
        add_summary(summary)
        add_notes(notes)
        add_ts(ts)
        add_raw(where)                          # the bytes stay in the file (see FileBytes, and ``placed``)
        add_offset(offset)
        if keep or topic_ids is not None:
            extras[index] = (message if keep else None, topic_ids)
        index += 1
    analyzer.frame_count = count
    for made in analyzer.finish():              # the general pipeline's connections end (as at end of capture)
        objects[index] = made
        index += 1
        for column in filled:
            column.append(None)
        add_start(-1)
        add_end(-1)
    yield index
    if not whole:                               # a streaming reader took every row already
        return None
    dense = row_columns
    request_frames, response_frames, latency_column = [None] * index, [None] * index, [None] * index
    for asked, answer, asked_frame, answer_frame, latency in pairs:
        response_frames[asked] = answer_frame
        request_frames[answer] = asked_frame
        latency_column[asked] = latency_column[answer] = latency
    inferred_column = [False] * index
    for at in inferred_at:
        inferred_column[at] = True
    dense[R_REQUEST_FRAME] = request_frames
    dense[R_RESPONSE_FRAME] = response_frames
    dense[R_LATENCY] = latency_column
    dense[R_INFERRED] = inferred_column
    return dense, objects, extras, analyzer, deferred, (place_starts, place_ends)


def _correlation_id(data, where: tuple) -> int:
    """The correlation id of the response at ``where`` (a place as in the frames' rows), read where it lies
    (-1 when the frame is shorter than its header)."""
    if len(where) == 2:
        start, end = where
        return CORRELATION.unpack_from(data, start + 4)[0] if end - start >= 8 else -1
    buffer, at = span_head(data, where, 8)
    return CORRELATION.unpack_from(buffer, at + 4)[0] if len(buffer) - at >= 8 else -1


def _ip_name(value: int, names: dict[int, str]) -> str:
    name = names.get(value)
    if name is None:
        name = names[value] = socket.inet_ntoa(value.to_bytes(4, "big"))
    return name
