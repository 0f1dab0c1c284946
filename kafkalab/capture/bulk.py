"""Reading a whole classic pcap file fast, when most of its traffic is regular.

Owns: :func:`read_bulk`, which ``read_capture`` tries first for uncompressed pcap and pcapng files of
IPv4 traffic (on any common link layer). It gives exactly the frames, tables and connections the general pipeline
(:class:`~.analyzer.Analyzer`, packet by packet) gives, only faster, by doing the per-packet work in bulk:

1. the packet index (:func:`kafkalab.pcap.index.packet_index`: every TCP segment's headers as columns, read
   with numpy over the mapped file);
2. the streams and frames stages (:func:`.streams.streams`, vectorised): connections numbered by first
   packet, as the general pipeline does, each classified regular or not, and the regular connections'
   frames cut (a frame's position is the packet holding its last byte);
3. a second pass in packet order decodes the regular connections' frames and pairs them. Every packet of
   the other connections goes to an :class:`~.analyzer.Analyzer`, which numbers its streams and frames
   within the same sequence, so the two kinds interleave exactly as in a single general run.

The frames table is built from the rows at the end of the read; what is kept is the table, the file's bytes
with each frame's place in them, and the few objects that cannot be made again (see :class:`FrameStore`).
:class:`~kafkalab.dissect.frame.Frame` objects are made on first access (``cap[n]``, iteration). When the
file is anything else (gzip, another link type, pcapng packet blocks other than enhanced ones, IPv6 or
VLAN-tagged TCP, IP fragments, a damaged file, a connection reusing a 5-tuple), :func:`read_bulk` returns
None and the general pipeline reads the file, so nothing here ever has to be right about those cases.
"""
from __future__ import annotations

import mmap
import os
import socket
import struct
from typing import Iterable

from kafkalab.dissect import decoding
from kafkalab.dissect.frame import describe, describe_body
from kafkalab.dissect.repeats import Repeats, request_key, response_key
from kafkalab.pcap import PacketDecoder, TcpPacket, endpoint
from kafkalab.pcap.files import LinkRecord
from kafkalab.protocol.correlation import API_VERSIONS, advertised_ranges, expects_response

from .analyzer import Analyzer
from .frame_store import (R_INFERRED, R_LATENCY, R_OFFSET, R_REQUEST_FRAME, R_RESPONSE_FRAME, FileBytes, FrameStore,
                          HeldBytes)
from .session import _KEEP_MESSAGES, unpaired_response
from .streams import Conn, _dotted, span_bytes

_SIZE = struct.Struct(">i")


class Bail(Exception):
    """The file is not one the bulk reader handles: the general pipeline reads it."""



def read_bulk(source, ports: Iterable[int] | None = None):
    """A :class:`~.capture.Capture` of ``source`` (a classic pcap path), or None when the general pipeline
    must read it."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    try:
        with open(source, "rb") as stream:
            head = stream.peek(24)[:24]
            if len(head) < 24 or head[:2] == b"\x1f\x8b":
                return None
            # Mapped, not read: the page cache is parsed in place. Nothing keeps the map after the read
            # (frames' bytes are read back from the file when asked for, see FileBytes, which notices a
            # change); a file cut shorter *during* the read would stop the process, which is why only files
            # already written are read this way (tcpdump and dumpcap only ever append).
            data = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        return _read(data, ports, source)
    except Bail:
        return None


def _read(data: bytes, ports: Iterable[int] | None, path):
    from kafkalab.pcap.index import NotIndexable, packet_index      # numpy: only when a file is read in bulk

    try:
        index = packet_index(data)
    except NotIndexable:
        raise Bail from None
    return read_index(index, data, ports, path)


def read_index(index, data, ports: Iterable[int] | None, path=None):
    """The :class:`~.capture.Capture` of the packets of a :class:`~kafkalab.pcap.index.PacketIndex` whose
    payloads are in ``data`` (the mapped capture file at ``path``, or, with no path, any buffer: a
    distributed reader's payloads of one group of connections); raises :class:`Bail` where the general
    pipeline must read them."""
    from .streams import NotRegular, streams

    from .analyzer import DEFAULT_PORTS
    from .capture import Capture

    records = index.records
    if len(index.others):                       # what the general decoder makes of the rest: no TCP allowed
        decoder = PacketDecoder()
        for i in index.others.tolist():
            start, stored = int(records.start[i]), int(records.stored[i])
            record = LinkRecord(i + 1, int(records.ts_ns[i]), int(records.linktype[i]), data[start:start + stored],
                                int(records.original[i]))
            if decoder.decode(record) is not None or decoder.pending_fragments():
                raise Bail
    if not len(index):
        raise Bail
    kafka_ports = DEFAULT_PORTS | frozenset(ports or ())
    try:
        conns, conn_of, frames = streams(index, data, kafka_ports)
    except NotRegular:
        raise Bail from None
    if all(c.irregular for c in conns):
        raise Bail
    for conn in conns:
        if not conn.irregular:
            conn.client_ip = _dotted(conn.ends[conn.client][0])
    packet_conn = [conns[c] for c in conn_of.tolist()]
    if any(conn.irregular for conn in conns):           # their packets go to the general path one by one
        columns = [index.src.tolist(), index.sport.tolist(), index.dst.tolist(), index.dport.tolist(),
                   index.seq.tolist(), index.ack.tolist(), index.flags.tolist(), index.payload_start.tolist(),
                   index.payload_length.tolist(), index.number.tolist(), index.ts_ns.tolist()]
    else:
        columns = [None] * 10 + [index.ts_ns.tolist()]
    row_columns, objects, extras, analyzer = _decode(data, columns, conns, packet_conn, frames, kafka_ports)
    del frames, packet_conn, columns
    store = FrameStore(row_columns, objects, extras)
    store.raw = FileBytes(path, store.raw) if path is not None else HeldBytes(data, store.raw)
    del row_columns
    connections = [_connection_row(c) for c in conns if not c.irregular]
    return Capture(store, analyzer, analyzer.diagnostics, connections=connections, packets=len(index),
                   streams=len(conns))


def _decode(data: bytes, columns: list, conns: list[Conn], packet_conn: list[Conn], frames: list,
            kafka_ports: frozenset):
    """Pass 2, in packet order: regular frames decoded and paired; other connections' packets to an
    Analyzer; one frame numbering for both.

    Returns (row columns, objects, extras, analyzer): the frames table's values column by column (the row
    layout, R_FRAME to R_OFFSET; no per-frame row object is made), the general pipeline's Frame objects by
    index (their column values are placeholders until :class:`FrameStore` fills them in), and index ->
    (kept message, topic ids) where either is set."""
    src_ips, sports, dst_ips, dports, seqs, acks, flagss, starts, lengths, numbers, ts_ns = columns
    analyzer = Analyzer(kafka_ports)
    host_requests = analyzer._host_requests
    topic_names = analyzer.topic_names
    names: dict[int, str] = {}
    dense = [[] for _ in range(R_OFFSET + 1)]
    (c_frame, c_stream, c_src, c_dst, c_kind, c_api_key, c_api_name, c_api_version, c_correlation, c_client_id,
     c_size, _, _, _, c_error_code, c_error, c_topics, c_record_count, c_summary, c_diagnostics, _, c_ts, c_raw,
     c_offset) = dense
    objects: dict[int, object] = {}
    extras: dict[int, tuple] = {}
    pairs: list[tuple] = []                     # (request index, response index, latency)
    inferred_at: list[int] = []
    latencies: dict[float, float] = {}          # seconds between request and response -> latency_ms
    count = 0
    index = 0                                   # next row
    request, request_parts = decoding.request, decoding.request_parts
    response, response_parts = decoding.response, decoding.response_parts
    unpack_from = _SIZE.unpack_from
    from kafkalab.pcap.index import WINDOW, release

    view = memoryview(data)
    let_go = WINDOW
    repeats = Repeats()                         # frames seen before (see kafkalab.dissect.repeats)
    request_memo, response_memo, remember = repeats.requests, repeats.responses, repeats.remember
    sessions, given_up = analyzer.sessions, set()    # irregular connections the analyzer found not Kafka
    irregular = ([i for i, conn in enumerate(packet_conn) if conn.irregular]
                 if any(conn.irregular for conn in conns) else [])
    for frame in _merge(irregular, frames):
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
                for column in dense:
                    column.append(None)
            count = analyzer.frame_count
            if sessions[conn.index].kafka is False:
                given_up.add(conn.index)
            continue
        if len(frame) == 6:
            i, conn, side, offset, start, end = frame
            raw = data[start:end]
            where = (start, end)
            if start > let_go:                  # the pages read so far are let go (see pcap.index.release)
                release(data, start)
                let_go = start + WINDOW
        else:
            i, conn, side, offset, _, _, where = frame
            raw = span_bytes(view, where)
        ts = ts_ns[i] / 1e9
        count += 1
        if side == conn.client:
            key = request_key(raw)
            seen = request_memo.get(key)
            if seen is not None:                # the same request as before, but for its correlation id
                api_key, api_name, version, client_id, size, code, error, topics, records, summary, answered = seen
                topics = list(topics)
                correlation_id = unpack_from(raw, 8)[0]
                notes, message, keep, topic_ids = [], None, False, None
            elif (parts := request_parts(raw)) is not None:     # the usual case: no Request object made
                api_key, api_name, version, correlation_id, client_id, body, size, _, _ = parts
                message, keep = None, False
                topics, code, error, records, notes, summary, topic_ids = describe_body(
                    api_key, api_name, version, "request", body, None, topic_names)
                answered = expects_response(api_key, body)
                remember(request_memo, key, "request", (api_key, api_name, version, client_id, size, code, error,
                                                         tuple(topics), records, summary, answered), notes)
            else:
                message = request(raw)
                api_key, version, correlation_id = message.api_key, message.api_version, message.correlation_id
                api_name, client_id, body, size = message.api_name, message.client_id, message.body, message.size
                keep = api_key in _KEEP_MESSAGES or body is None
                topics, code, error, records, notes, summary, topic_ids = describe(message, topic_names, not keep)
                answered = expects_response(api_key, body)
            c_kind.append("request")
            conn.requests += 1
            if conn.asked.request(api_key, version, correlation_id, answered,
                                  (index, count, api_key, version, client_id, ts)):
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
            correlation_id = unpack_from(raw, 4)[0] if len(raw) >= 8 else -1
            asked = conn.asked.response(correlation_id)
            inferred = False
            parts = None
            if asked is not None:
                api_key, version, client_id = asked[2], asked[3], asked[4]
                key = response_key(raw, api_key, version)
                seen = response_memo.get(key)
                if seen is not None:
                    parts = True
                    _, api_name, _, _, size, code, error, topics, records, summary, _ = seen
                    topics = list(topics)
                    notes, message, keep, topic_ids = [], None, False, None
                elif (parts := response_parts(raw, api_key, version)) is not None:  # no Response object made
                    api_name, correlation_id, body, size, _, _ = parts
                    message, keep = None, False
                    topics, code, error, records, notes, summary, topic_ids = describe_body(
                        api_key, api_name, version, "response", body, None, topic_names)
                    remember(response_memo, key, "response", (api_key, api_name, version, None, size, code, error,
                                                               tuple(topics), records, summary, True), notes)
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
            c_kind.append("response")
            conn.responses += 1
            if asked is not None:
                # round() is slow and latencies repeat (timestamps have a resolution): remember its results
                elapsed = ts - asked[5]
                latency = latencies.get(elapsed)
                if latency is None:
                    latency = round(elapsed * 1000.0, 6)
                    if len(latencies) < 65536:
                        latencies[elapsed] = latency
                pairs.append((asked[0], index, asked[1], count, latency))
            if inferred:
                inferred_at.append(index)
            if api_key == API_VERSIONS and body:
                conn.advertised.extend(advertised_ranges(body))
        c_api_name.append(api_name)
        c_frame.append(count)
        c_stream.append(conn.index)
        c_src.append(conn.names[side])
        c_dst.append(conn.names[1 - side])
        c_api_key.append(api_key)
        c_api_version.append(version)
        c_correlation.append(correlation_id)
        c_client_id.append(client_id)
        c_size.append(size)
        c_error_code.append(code)
        c_error.append(error)
        c_topics.append(topics)
        c_record_count.append(records)
        c_summary.append(summary)
        c_diagnostics.append(notes)
        c_ts.append(ts)
        c_raw.append(where)                     # the bytes stay in the file (see FileBytes)
        c_offset.append(offset)
        if keep or topic_ids is not None:
            extras[index] = (message if keep else None, topic_ids)
        index += 1
    analyzer.frame_count = count
    for made in analyzer.finish():              # the general pipeline's connections end (as at end of capture)
        objects[index] = made
        index += 1
        for column in dense:
            column.append(None)
    analyzer.packet_count = len(packet_conn)
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
    return dense, objects, extras, analyzer


def _merge(packets: list[int], frames: list[tuple]) -> list:
    """Events in packet order: a packet of an irregular connection as its position (an int), a regular
    connection's frame as itself, after the packets before the one that completed it (frames of one packet
    in stream order)."""
    if not packets:
        return frames
    if not frames:
        return packets
    out = []
    j, total = 0, len(frames)
    for i in packets:
        while j < total and frames[j][0] < i:
            out.append(frames[j])
            j += 1
        out.append(i)
    out.extend(frames[j:])
    return out


def _ip_name(value: int, names: dict[int, str]) -> str:
    name = names.get(value)
    if name is None:
        name = names[value] = socket.inet_ntoa(value.to_bytes(4, "big"))
    return name


def _connection_row(conn: Conn) -> dict:
    client = conn.client
    server = 1 - client
    return {
        "stream": conn.index, "client": conn.names[client], "server": conn.names[server],
        "first_time": conn.first_ts, "last_time": conn.last_ts,
        "client_bytes": conn.payload_bytes[client], "server_bytes": conn.payload_bytes[server],
        "client_packets": conn.packets[client], "server_packets": conn.packets[server],
        "requests": conn.requests, "responses": conn.responses,
        "client_ids": list(conn.client_ids), "gaps": 0, "gap_bytes": 0, "midstream": False, "state": conn.state,
    }
