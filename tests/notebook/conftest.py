"""Frames for the notebook tests: the demo's frames and every golden frame from real clients, as Frames."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalab.dissect.frame import Frame, frame_from_message
from kafkalab.protocol import decode_request, decode_response

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def load_golden_frames(client: str | None = None) -> list[Frame]:
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    frames = []
    for entry in manifest["files"]:
        if client is not None and entry["client"] != client:
            continue
        raw = (GOLDEN / entry["file"]).read_bytes()
        if entry["direction"] == "request":
            message = decode_request(raw, annotate=True)
        else:
            message = decode_response(raw, entry["api_key"], entry["api_version"], annotate=True)
        frames.append(frame_from_message(message, raw, number=len(frames) + 1, ts=1_700_000_000 + len(frames),
                                         stream=entry["connection"], client_id=entry.get("client_id")))
    return frames


@pytest.fixture(scope="session")
def golden_frames() -> list[Frame]:
    return load_golden_frames()


@pytest.fixture()
def demo() -> list[Frame]:
    from kafkalab.notebook import sample_frames
    return sample_frames()
