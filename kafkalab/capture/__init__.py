"""Captures to Kafka frames: TCP reassembly, frame cutting with resynchronisation, pairing, inference.

``read_capture(path)`` returns a :class:`Capture` (frames, exchanges, records and connections tables;
``cap[n]`` is frame n; ``cap.filter("...")``); ``iter_frames(path)`` streams
:class:`~kafkalab.dissect.frame.Frame`s and ``write_frames(path, out)`` streams the frames table into Parquet;
``sniff(iface, ports)`` captures live (a packet socket and :mod:`.bpf`'s kernel filter). Both readers take a list of files (a rotated capture).

The pipeline in stages: the packet index (:mod:`kafkalab.pcap.index`, numpy over the mapped file), streams and
frames (:mod:`.streams` in bulk for regular connections; :class:`Analyzer` over :class:`HalfStream`, packet
by packet, for the others and for streaming), frame cutting (:func:`kafkalab.protocol.framing.cut_frames`),
pairing and inference (:mod:`kafkalab.protocol.correlation`), then rows. :mod:`.bulk` joins the two paths in
one read; :mod:`.cli` holds the ``decode``, ``stats`` and ``sniff`` commands.

Numbering, the one step that looks across connections (a reader that splits a capture by connection must
number the same way to give the same rows):

* stream ids: connections in the order of their first packet (in capture-time order of the files for a
  rotated capture); a new SYN on the addresses of an ended connection opens a new one;
* frame numbers: frames in the order of the packet that completes them (the one holding their last byte),
  frames completed by the same packet in stream order; a response held back for its connection's next
  request (its own request was lost, see ``KafkaSession._hold_unpaired``) takes its number when that request
  completes, with the frames after it on its connection; what is only complete at the end of the capture is
  numbered last, connection by connection in stream-id order.

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
