"""Reading a whole classic pcap file fast, when most of its traffic is regular.

Owns: :func:`read_bulk`, which ``read_capture`` tries first for uncompressed pcap and pcapng files of
Ethernet/IPv4 traffic. It gives exactly the frames, tables and connections the general pipeline
(:class:`~.analyzer.Analyzer`, packet by packet) gives, only faster, by doing the per-packet work in bulk:

1. the record headers are read in one loop, and the Ethernet, IPv4 (no options) and TCP headers of every
   packet with numpy over the whole file at once;
2. one pass over the TCP packets assigns connections (streams numbered by first packet, as the general
   pipeline does) and classifies each connection. It is *regular* when it is on a Kafka port, both
   directions open with a SYN, every data segment follows the previous one exactly (no hole, overlap,
   retransmission or reordering), no acknowledgement covers bytes the capture did not see, no byte follows
   a FIN or RST, and its byte streams cut into whole frames. On the way it cuts regular connections'
   frames (a frame's position is where its last byte arrived);
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
from kafkalab.dissect.frame import describe
from kafkalab.pcap import PacketDecoder, TcpPacket, endpoint
from kafkalab.pcap.files import MAX_RECORD, PCAP_MAGICS, PCAPNG_SHB, LinkRecord
from kafkalab.protocol.correlation import PRODUCE, expects_response

from .analyzer import Analyzer
from .framing import MAX_FRAME
from .session import _KEEP_MESSAGES, API_VERSIONS, advertised_ranges, unpaired_response

SEQ_MOD = 1 << 32
HALF = 1 << 31
FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
_SIZE = struct.Struct(">i")

# row layout: the frames table's columns (FRAME_COLUMNS with ts for time, see frame._ROW_FIELDS), then extras
(R_FRAME, R_STREAM, R_SRC, R_DST, R_KIND, R_API_KEY, R_API_NAME, R_API_VERSION, R_CORRELATION, R_CLIENT_ID, R_SIZE,
 R_REQUEST_FRAME, R_RESPONSE_FRAME, R_LATENCY, R_ERROR_CODE, R_ERROR, R_TOPICS, R_RECORD_COUNT, R_SUMMARY,
 R_DIAGNOSTICS, R_INFERRED, R_TS, R_RAW, R_OFFSET, R_TOPIC_IDS, R_MESSAGE) = range(26)


class _Bail(Exception):
    """The file is not one the bulk reader handles: the general pipeline reads it."""


class _Conn:
    __slots__ = ("index", "ends", "names", "kafka_port", "client", "irregular", "base", "delivered", "ended",
                 "syn", "pending", "packets", "payload_bytes", "first_ts", "last_ts", "state", "any_payload",
                 "in_flight", "requests_seen", "advertised", "client_ids", "client_ip")
    # ends: ((ip, port) of side 0, of side 1) as integers; side 0 sent the connection's first packet

    def __init__(self, index: int, a: tuple, b: tuple, kafka_port: bool, ts: float) -> None:
        self.index = index
        self.ends = (a, b)
        self.names = (endpoint(_dotted(a[0]), a[1]), endpoint(_dotted(b[0]), b[1]))
        self.kafka_port = kafka_port
        self.client: int | None = None          # side (0 or 1) of the client
        self.irregular = not kafka_port
        self.base = [None, None]                 # sequence number of stream offset 0, per side
        self.delivered = [0, 0]
        self.ended = [False, False]
        self.syn = [None, None]
        self.pending = [None, None]              # side -> [start offset, need, have, pieces]
        self.packets = [0, 0]
        self.payload_bytes = [0, 0]
        self.first_ts = self.last_ts = ts
        self.state = "open"
        self.any_payload = False
        self.in_flight: dict[int, list] = {}
        self.requests_seen: dict[tuple[int, int], None] = {}
        self.advertised: list[tuple[int, int]] = []
        self.client_ids: list[str] = []
        self.client_ip = ""


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
            # (each frame's bytes are copied out as it is decoded), so a file changed later cannot hurt.
            data = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        return _read(data, ports)
    except _Bail:
        return None


def _read(data: bytes, ports: Iterable[int] | None):
    import numpy as np

    from .analyzer import DEFAULT_PORTS
    from .capture import Capture

    magic = struct.unpack_from("<I", data)[0]
    if magic in PCAP_MAGICS:
        body, ts_ns, stored, original, snaplen = _pcap_records(data)
    elif magic == PCAPNG_SHB:
        body, ts_ns, stored, original, snaplen = _pcapng_records(data)
    else:
        raise _Bail
    u8 = np.frombuffer(data, dtype=np.uint8)
    safe = body + 54 <= len(data)                 # room for Ethernet, IPv4 and TCP headers to be read
    if not safe.all():
        body = np.where(safe, body, 0)

    def byte(k, at=body):
        return u8[at + k].astype(np.uint32)

    def be16(k, at=body):
        return (byte(k, at) << 8) | byte(k + 1, at)

    def be32(k, at=body):
        return (be16(k, at) << 16) | be16(k + 2, at)

    version_ihl = byte(14)
    total = be16(16)
    header_length = (byte(46) >> 4) * 4          # TCP data offset, when the IP header has no options
    fast = (safe & (stored >= 54) & (stored == original) & ((stored <= snaplen) | (snaplen == 0))
            & (byte(12) == 8) & (byte(13) == 0) & (version_ihl == 0x45) & (byte(23) == 6)
            & ((be16(20) & 0x3FFF) == 0) & (total >= 40) & (total + 14 <= stored) & (header_length >= 20))
    if not fast.all():                          # what the general decoder makes of the rest: no TCP allowed
        decoder = PacketDecoder()
        starts = np.where(safe, body, -1)
        for i in np.nonzero(~fast)[0].tolist():
            start = int(starts[i]) if starts[i] >= 0 else int(body[i])
            record = LinkRecord(i + 1, int(ts_ns[i]), 1, data[start:start + int(stored[i])], int(original[i]))
            if decoder.decode(record) is not None or decoder.pending_fragments():
                raise _Bail
    index = np.nonzero(fast)[0]
    if not len(index):
        raise _Bail
    at = body[index]
    total, header_length = total[index].astype(np.int64), header_length[index].astype(np.int64)
    ts_ns = ts_ns[index].tolist()
    payload_start = at + 34 + header_length
    payload_length = np.maximum(at + 14 + total - payload_start, 0)
    columns = [
        be32(26, at).tolist(), be16(34, at).tolist(), be32(30, at).tolist(), be16(36, at).tolist(),
        be32(38, at).tolist(), be32(42, at).tolist(), (byte(47, at) & 0x3F).tolist(),
        payload_start.tolist(), payload_length.tolist(), (index + 1).tolist(), ts_ns]
    kafka_ports = DEFAULT_PORTS | frozenset(ports or ())
    conns, packet_conn, frames = _classify(data, columns, kafka_ports)
    if all(c.irregular for c in conns):
        raise _Bail
    for conn in conns:
        if not conn.irregular:
            conn.client_ip = _dotted(conn.ends[conn.client][0])
    rows, analyzer = _decode(data, columns, conns, packet_conn, frames, kafka_ports)
    store = FrameStore(rows)
    del rows, frames, packet_conn, columns
    sent = _frames_sent(store.table, len(conns))
    connections = [_connection_row(c, sent) for c in conns if not c.irregular]
    return Capture(store, analyzer, [], connections=connections, packets=len(index), streams=len(conns))


class FrameStore:
    """The frames of a bulk read, held without one Python object per frame beyond its bytes: the frames table
    (built once, at the end of the read), each frame's bytes, stream offset and time, and the few objects
    that cannot be made again (frames of the general pipeline, kept messages). Frame objects are made on
    demand.

    Why: a capture read into memory as millions of small objects costs the cyclic garbage collector a walk
    over all of them, again and again; tables, arrays and bytes cost it (next to) nothing."""

    def __init__(self, rows: list) -> None:
        import numpy as np

        from kafkalab.dissect.frame import ROW_FIELDS, columns_table

        n = len(rows)
        self.objects: list = [None] * n            # Frame objects: the general pipeline's, and those made
        for i, row in enumerate(rows):
            if row.__class__ is not list:
                self.objects[i] = row
        if any(self.objects):
            rows = [_as_row(r) if r.__class__ is not list else r for r in rows]
        columns = list(zip(*rows)) if rows else [()] * (R_MESSAGE + 1)
        self.table = columns_table(dict(zip(ROW_FIELDS, columns)))
        self.raw = list(columns[R_RAW])
        self.ts = np.array(columns[R_TS], dtype=np.float64)
        self.offsets = np.array(columns[R_OFFSET], dtype=np.int64)
        self.extras: dict[int, tuple] = {      # index -> (message, topic_ids) where either is set
            i: (message, ids) for i, (message, ids) in enumerate(zip(columns[R_MESSAGE], columns[R_TOPIC_IDS]))
            if message is not None or ids is not None}
        self._columns: dict[str, list] | None = None

    def __len__(self) -> int:
        return len(self.objects)

    def frame(self, index: int):
        frame = self.objects[index]
        if frame is None:
            frame = self.objects[index] = self._make(index)
        return frame

    def frames(self) -> list:
        return [self.frame(i) for i in range(len(self.objects))]

    def _make(self, index: int):
        from kafkalab.dissect.frame import ROW_FIELDS, frame_from_row

        if self._columns is None:
            self._columns = {name: _plain_column(self.table[name]) for name in ROW_FIELDS if name != "ts"}
        row = [self._columns[name][index] for name in ROW_FIELDS[:-1]]
        message, topic_ids = self.extras.get(index, (None, None))
        row += [float(self.ts[index]), self.raw[index], int(self.offsets[index]), topic_ids, message]
        return frame_from_row(row)


def _as_row(frame) -> list:
    """A row for a Frame of the general pipeline."""
    from kafkalab.dissect.frame import _ROW

    return [*_ROW(frame), frame.raw, frame.stream_offset if frame.stream_offset is not None else -1,
            frame.topic_ids, None]


def _plain_column(column) -> list:
    """A table column as Python values, nulls as None."""
    if column.dtype == object:
        return column.tolist()
    return column.astype(object).where(column.notna(), None).tolist()


def _pcap_records(data: bytes):
    """(packet data offsets, timestamps in ns, stored lengths, original lengths, snap lengths) of every
    record of a classic pcap file of Ethernet packets, as int64 arrays."""
    import numpy as np

    order, nanos = PCAP_MAGICS[struct.unpack_from("<I", data)[0]]
    major, _, _, _, snaplen, linktype = struct.unpack_from(order + "HHiIII", data, 4)
    if major != 2 or linktype & 0x0FFFFFFF != 1:
        raise _Bail
    unpack = struct.Struct(order + "IIII").unpack_from
    offsets, heads = [], []
    add_offset, add_head = offsets.append, heads.append
    pos, n = 24, len(data)
    while pos + 16 <= n:
        head = unpack(data, pos)
        if head[2] > MAX_RECORD:
            raise _Bail
        add_offset(pos + 16)
        add_head(head)
        pos += 16 + head[2]
    if pos != n or not offsets:                 # truncated, or no packets: the general reader reports it
        raise _Bail
    fields = np.array(heads, dtype=np.int64)
    ts_ns = fields[:, 0] * 1_000_000_000 + fields[:, 1] * (1 if nanos else 1000)
    return (np.array(offsets, dtype=np.int64), ts_ns, fields[:, 2], fields[:, 3],
            np.full(len(offsets), snaplen, dtype=np.int64))


def _pcapng_records(data: bytes):
    """The same for a pcapng file whose packets are all Enhanced Packet Blocks on Ethernet interfaces (any
    other packet block, a damaged block or another link type: the general reader)."""
    import numpy as np

    from kafkalab.pcap.files import _Interface, _interface_options

    order = "<"
    interfaces: list = []
    offsets, stamps, stored, original, snaplens = [], [], [], [], []
    pos, n = 0, len(data)
    while pos < n:
        if pos + 12 > n:
            raise _Bail
        if data[pos:pos + 4] == b"\x0a\x0d\x0d\x0a":           # section header: byte order, new interfaces
            bom = data[pos + 8:pos + 12]
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else None
            if order is None:
                raise _Bail
            interfaces = []
        kind, total = struct.unpack_from(order + "II", data, pos)
        if total < 12 or total % 4 or total > MAX_RECORD or pos + total > n or \
                struct.unpack_from(order + "I", data, pos + total - 4)[0] != total:
            raise _Bail
        if kind == 1:
            if total < 20:
                raise _Bail
            linktype, _, snaplen = struct.unpack_from(order + "HHI", data, pos + 8)
            interfaces.append(_interface_options(_Interface(linktype, snaplen), data[pos + 8:pos + total - 4], 8,
                                                 order))
        elif kind == 6:
            if total < 32:
                raise _Bail
            iface, high, low, captured, orig = struct.unpack_from(order + "IIIII", data, pos + 8)
            if iface >= len(interfaces) or interfaces[iface].linktype != 1 or captured > total - 32:
                raise _Bail
            info = interfaces[iface]
            offsets.append(pos + 28)
            stamps.append(info.ts_ns((high << 32) | low))
            stored.append(captured)
            original.append(orig)
            snaplens.append(info.snaplen)
        elif kind in (2, 3):                    # obsolete and simple packet blocks
            raise _Bail
        pos += total
    if not offsets:
        raise _Bail
    return (np.array(offsets, dtype=np.int64), np.array(stamps, dtype=np.int64), np.array(stored, dtype=np.int64),
            np.array(original, dtype=np.int64), np.array(snaplens, dtype=np.int64))


def _classify(data: bytes, columns: list, kafka_ports: frozenset):
    """Pass 1: connections, regularity, and the regular connections' frames.
    Returns (connections, connection of each packet, frames); a frame is
    (packet position, connection, side, stream offset, [(start, end) byte ranges])."""
    src_ips, sports, dst_ips, dports, seqs, acks, flagss, starts, lengths, _, ts_ns = columns
    routes: dict[tuple, tuple] = {}
    conns: list[_Conn] = []
    packet_conn: list[_Conn] = []
    frames: list[tuple] = []
    unpack = _SIZE.unpack_from
    for i in range(len(seqs)):
        s, sp, d, dp = src_ips[i], sports[i], dst_ips[i], dports[i]
        flags = flagss[i]
        ts = ts_ns[i] / 1e9
        route = routes.get((s, sp, d, dp))
        if route is None:
            other = routes.get((d, dp, s, sp))
            if other is not None:
                route = routes[(s, sp, d, dp)] = (other[0], 1 - other[1])
            else:
                conn = _Conn(len(conns), (s, sp), (d, dp), sp in kafka_ports or dp in kafka_ports, ts)
                conns.append(conn)
                if conn.kafka_port and not flags & SYN:     # as Analyzer._open: the Kafka port is the server's
                    conn.client = 0 if dp in kafka_ports else 1
                route = routes[(s, sp, d, dp)] = (conn, 0)
        conn, side = route
        packet_conn.append(conn)
        conn.packets[side] += 1
        if ts > conn.last_ts:
            conn.last_ts = ts
        length = lengths[i]
        conn.payload_bytes[side] += length
        seq = seqs[i]
        if flags & SYN and not flags & ACK and conn.packets[0] + conn.packets[1] > 1:
            # A SYN on a known 5-tuple: the general pipeline may open a new stream here, which would change
            # the numbering of every later stream. Only an exact repeat of the connection's own SYN before
            # any data is harmless (and left to the general pipeline).
            if conn.irregular or conn.state != "open" or conn.any_payload or conn.syn[side] != seq:
                raise _Bail
            conn.irregular = True
        if conn.irregular:
            continue
        if flags & SYN:
            if conn.syn[side] is not None or length:
                conn.irregular = True
                continue
            conn.syn[side] = seq
            conn.base[side] = (seq + 1) % SEQ_MOD
            if conn.client is None:
                conn.client = side if not flags & ACK else 1 - side
            seq = (seq + 1) % SEQ_MOD
        if length or flags & FIN:
            if conn.base[side] is None or conn.ended[side] or conn.client is None:
                conn.irregular = True           # mid-stream start, bytes after FIN/RST, unknown roles
                continue
            if length:
                delivered = conn.delivered[side]
                if (seq - conn.base[side] - delivered) % SEQ_MOD:
                    conn.irregular = True       # a hole, an overlap, a retransmission
                    continue
                conn.any_payload = True
                if not _cut(data, conn, side, i, starts[i], length, delivered, frames, unpack):
                    conn.irregular = True
                    continue
                conn.delivered[side] = delivered + length
            if flags & FIN:
                conn.ended[side] = True
                if conn.state == "open":
                    conn.state = "FIN"
        if flags & ACK:
            peer = 1 - side
            base = conn.base[peer]
            if base is not None and not conn.ended[peer]:
                delta = (acks[i] - base - conn.delivered[peer] + HALF) % SEQ_MOD - HALF
                if delta > 0:
                    conn.irregular = True       # acknowledges bytes the capture did not see (yet)
                    continue
        if flags & RST:
            conn.state = "RST"
            conn.ended = [True, True]
    for conn in conns:
        if conn.pending[0] is not None or conn.pending[1] is not None:
            conn.irregular = True               # a frame cut off by the end of the capture
    frames = [f for f in frames if not f[1].irregular]     # cut before their connection turned out irregular
    return conns, packet_conn, frames


def _cut(data: bytes, conn: _Conn, side: int, position: int, start: int, length: int, delivered: int,
         frames: list, unpack) -> bool:
    """Cut the frames a data segment completes; False when the stream does not cut into whole frames."""
    pos, end = start, start + length
    pending = conn.pending[side]
    if pending is not None:
        offset, need, have, pieces = pending
        missing = need - have
        if length < missing:
            pieces.append((pos, end))
            pending[2] = have + length
            return True
        pieces.append((pos, pos + missing))
        frames.append((position, conn, side, offset, pieces))
        conn.pending[side] = None
        pos += missing
    while pos + 4 <= end:
        size = unpack(data, pos)[0]
        if size < 0 or size > MAX_FRAME:
            return False
        stop = pos + 4 + size
        if stop > end:
            conn.pending[side] = [delivered + pos - start, 4 + size, end - pos, [(pos, end)]]
            return True
        frames.append((position, conn, side, delivered + pos - start, [(pos, stop)]))
        pos = stop
    return pos == end                           # a size prefix split across segments: not handled here


def _decode(data: bytes, columns: list, conns: list[_Conn], packet_conn: list[_Conn], frames: list,
            kafka_ports: frozenset):
    """Pass 2, in packet order: regular frames decoded and paired; other connections' packets to an
    Analyzer; one frame numbering for both."""
    src_ips, sports, dst_ips, dports, seqs, acks, flagss, starts, lengths, numbers, ts_ns = columns
    analyzer = Analyzer(kafka_ports)
    host_requests = analyzer._host_requests
    topic_names = analyzer.topic_names
    names: dict[int, str] = {}
    rows: list = []
    count = 0
    request = decoding.request
    response = decoding.response
    irregular = [i for i, conn in enumerate(packet_conn) if conn.irregular]
    events = _merge(irregular, frames)
    for i, frame in events:
        if frame is None:
            conn = packet_conn[i]
            s, d = src_ips[i], dst_ips[i]
            start = starts[i]
            packet = TcpPacket(numbers[i], ts_ns[i], _ip_name(s, names), sports[i], _ip_name(d, names), dports[i],
                               seqs[i], acks[i], flagss[i], data[start:start + lengths[i]], [])
            analyzer.next_stream = conn.index
            analyzer.frame_count = count
            rows.extend(analyzer.feed(packet))
            count = analyzer.frame_count
            continue
        _, conn, side, offset, pieces = frame
        if len(pieces) == 1:
            raw = data[pieces[0][0]:pieces[0][1]]
        else:
            raw = b"".join(data[a:b] for a, b in pieces)
        ts = ts_ns[i] / 1e9
        count += 1
        if side == conn.client:
            message = request(raw)
            keep = message.api_key in _KEEP_MESSAGES or message.body is None
            topics, code, error, records, notes, summary, topic_ids = describe(message, topic_names, not keep)
            api_key, version, correlation_id = message.api_key, message.api_version, message.correlation_id
            client_id = message.client_id
            row = [count, conn.index, conn.names[side], conn.names[1 - side], "request", api_key,
                   message.api_name, version, correlation_id, client_id, message.size, None, None, None,
                   code, error, topics, records, summary, notes, False, ts, raw, offset, topic_ids,
                   message if keep else None]
            if api_key >= 0 and version >= 0 and correlation_id >= 0:
                if api_key != PRODUCE or expects_response(api_key, message.body):
                    conn.in_flight[correlation_id] = row
                pair = (api_key, version)
                conn.requests_seen[pair] = None
                host = host_requests.get(conn.client_ip)
                if host is None:
                    host = host_requests[conn.client_ip] = {}
                host[pair] = None
            if client_id and client_id not in conn.client_ids:
                conn.client_ids.append(client_id)
        else:
            correlation_id = _SIZE.unpack_from(raw, 4)[0] if len(raw) >= 8 else -1
            asked = conn.in_flight.pop(correlation_id, None)
            inferred = False
            if asked is not None:
                message = response(raw, asked[R_API_KEY], asked[R_API_VERSION])
                client_id = asked[R_CLIENT_ID]
            else:
                message, inferred = unpaired_response(raw, correlation_id, conn.requests_seen, conn.advertised,
                                                      host_requests.get(conn.client_ip, {}))
                client_id = None
            keep = inferred or message.api_key in _KEEP_MESSAGES or message.body is None
            topics, code, error, records, notes, summary, topic_ids = describe(message, topic_names, not keep)
            row = [count, conn.index, conn.names[side], conn.names[1 - side], "response", message.api_key,
                   message.api_name, message.api_version, message.correlation_id, client_id, message.size,
                   None, None, None, code, error, topics, records, summary, notes, inferred, ts, raw, offset,
                   topic_ids, message if keep else None]
            if asked is not None:
                row[R_REQUEST_FRAME] = asked[R_FRAME]
                asked[R_RESPONSE_FRAME] = count
                row[R_LATENCY] = asked[R_LATENCY] = round((ts - asked[R_TS]) * 1000.0, 6)
            if message.api_key == API_VERSIONS and message.body:
                conn.advertised.extend(advertised_ranges(message.body))
        rows.append(row)
    analyzer.frame_count = count
    rows.extend(analyzer.finish())              # the general pipeline's connections end (as at end of capture)
    analyzer.packet_count = len(packet_conn)
    return rows, analyzer


def _dotted(value: int) -> str:
    return socket.inet_ntoa(value.to_bytes(4, "big"))


def _merge(packets: list[int], frames: list[tuple]) -> list[tuple]:
    """Events in packet order: (position, None) for a packet of an irregular connection, (position, frame)
    for a regular connection's frame completed by that packet (frames of one packet in stream order)."""
    if not packets:
        return [(f[0], f) for f in frames]
    if not frames:
        return [(i, None) for i in packets]
    out = []
    j, total = 0, len(frames)
    for i in packets:
        while j < total and frames[j][0] < i:
            out.append((frames[j][0], frames[j]))
            j += 1
        out.append((i, None))
    out.extend((f[0], f) for f in frames[j:])
    return out


def _ip_name(value: int, names: dict[int, str]) -> str:
    name = names.get(value)
    if name is None:
        name = names[value] = socket.inet_ntoa(value.to_bytes(4, "big"))
    return name


def _frames_sent(table, streams: int) -> dict[str, list[int]]:
    """Frames per stream, by kind."""
    import numpy as np

    stream = table["stream"].to_numpy(dtype=np.int64)
    kinds = table["kind"].to_numpy(dtype=object)
    return {kind: np.bincount(stream[kinds == kind], minlength=streams).tolist() for kind in ("request", "response")}


def _connection_row(conn: _Conn, sent: dict[str, list[int]]) -> dict:
    client = conn.client
    server = 1 - client
    return {
        "stream": conn.index, "client": conn.names[client], "server": conn.names[server],
        "first_time": conn.first_ts, "last_time": conn.last_ts,
        "client_bytes": conn.payload_bytes[client], "server_bytes": conn.payload_bytes[server],
        "client_packets": conn.packets[client], "server_packets": conn.packets[server],
        "requests": sent["request"][conn.index], "responses": sent["response"][conn.index],
        "client_ids": list(conn.client_ids), "gaps": 0, "gap_bytes": 0, "midstream": False, "state": conn.state,
    }
