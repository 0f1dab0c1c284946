"""Small ready-made Frames for notebooks and tests: the demo's frames as the Frame objects sources yield."""
from __future__ import annotations

from kafkalab.demo import demo_frames
from kafkalab.dissect.frame import Frame, frame_from_message
from kafkalab.protocol import decode_request, decode_response


def sample_frames(start_ts: float = 1_700_000_000.0) -> list[Frame]:
    """The demo's frames (ApiVersions request, gzip Produce request, Metadata response) numbered from 1."""
    frames = []
    for number, (_title, raw, response_of) in enumerate(demo_frames(), start=1):
        if response_of:
            message = decode_response(raw, *response_of, annotate=True)
        else:
            message = decode_request(raw, annotate=True)
        frames.append(frame_from_message(message, raw, number=number, ts=start_ts + number / 1000, stream=0,
                                         src="127.0.0.1:50000" if message.kind == "request" else "127.0.0.1:9092",
                                         dst="127.0.0.1:9092" if message.kind == "request" else "127.0.0.1:50000",
                                         client_id="kafkalab-demo"))
    return frames
