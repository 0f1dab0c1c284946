"""Captures to Kafka frames: TCP reassembly, frame cutting with resynchronisation, pairing, inference.

``read_capture(path)`` returns a :class:`Capture` (frames, exchanges, records and connections tables;
``cap[n]`` is frame n; ``cap.filter("...")``); ``iter_frames(path)`` streams
:class:`~kafkalab.dissect.frame.Frame`s and ``write_frames(path, out)`` streams the frames table into Parquet;
``sniff(iface, ports)`` captures live (a packet socket and :mod:`.bpf`'s kernel filter). Both readers take a list of files (a rotated capture).

The pipeline in stages, one engine (:mod:`.engine`) for every reader of a capture file: the packet index
(:func:`kafkalab.pcap.index.index_windows`, numpy over the mapped file, a window at a time), streams and
frames (:class:`.streams.Streams`: regular connections cut in bulk, :mod:`.segments`), frames to exchanges
and rows (:mod:`.bulk`: decoding and pairing, :mod:`kafkalab.protocol.correlation`). Irregular connections
(loss, reordering, mid-stream start, other ports) go through the general path (:class:`Analyzer` over
:class:`HalfStream` and :class:`.session.KafkaSession`, packet by packet) *as a stage of the same run*,
numbered in the same sequence. ``read_capture`` keeps every row; ``iter_frames``, ``write_frames`` and
``kafkalab decode`` take each window's rows as Frames and let them go (memory bounded by a window and the
open frames). What the engine does not read (gzip, file objects, packets, a rotated capture, files under
1 MiB when streaming, IPv6 or VLAN-tagged TCP, a connection's addresses reused) goes wholly through the
general path, which gives the same rows. A live sniff is that general path by nature (see :mod:`.live`).
:mod:`.cli` holds the ``decode``, ``stats`` and ``sniff`` commands.

Numbering, the one step that looks across connections (a reader that splits a capture by connection must
number the same way to give the same rows). Each connection's frames come out of its stages in order, each
with an *order key*; numbers are the ranks of the keys over the whole capture:

* stream ids: connections in the order of their first packet (in capture-time order of the files for a
  rotated capture); a new SYN on the addresses of an ended connection opens a new one;
* a frame's order key is (0, the position of its *numbering packet*, its rank among the frames that packet
  numbers) where the numbering packet is the one completing it (holding its last byte), the frames of one
  packet in stream order; or (1, stream id, rank in the connection) for what is only complete at the end of
  the capture (connection by connection in stream-id order);
* held responses: a response whose request was lost and which fits nothing its connection has asked yet is
  held for the connection's next request, which most likely names its API and version (see
  ``KafkaSession._hold_unpaired``); the held response and the frames after it on its connection take that
  request's completing packet as their numbering packet (in their connection's order), or the end of the
  capture if none comes (at most ``session.HOLD_LIMIT`` frames wait). The key depends on the connection's own
  packets only, so a reader that decodes connections apart (Spark) numbers them the same way: frames leave a
  connection's stages in key order, and each reader here numbers them as they leave, which is the rank.

Two facts are also shared across connections, and a reader that splits a capture must gather them first:
topic names learnt from Metadata responses (to name the topic ids of newer Fetch and Produce versions,
which a client often learns on another connection than the one it fetches on), and the requests a client
host made on its other connections (the last tier of inference, see :mod:`kafkalab.protocol.correlation`).
"""
from kafkalab.pcap import CaptureError

from .analyzer import DEFAULT_PORTS, Analyzer
from .capture import Capture, format_frame, iter_frames, read_capture
from .export import iter_batches, write_frames
from .live import LiveCapture, SniffError, sniff
from .reassembly import DataReceived, GapDetected, HalfStream, StreamEnded

__all__ = ["Analyzer", "Capture", "CaptureError", "DEFAULT_PORTS", "DataReceived", "GapDetected",
           "HalfStream", "LiveCapture", "SniffError", "StreamEnded", "format_frame", "iter_batches", "iter_frames",
           "read_capture", "sniff", "write_frames"]
