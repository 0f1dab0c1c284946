"""The frame journal: the data model's columns, request/response pairs, trees that tile their bytes."""
from __future__ import annotations

from codec_checks import assert_tiles
from kafka import KafkaProducer

from kafkalab.broker import Broker
from kafkalab.dissect.frame import FRAME_COLUMNS


def test_frames_table_columns_pairs_and_latency(broker):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, client_id="journal-test")
    producer.send("t", key=b"k", value=b"v", partition=0).get(20)
    producer.close()
    frames = broker.frames
    assert list(frames.columns) == FRAME_COLUMNS
    requests = frames[frames.kind == "request"]
    responses = frames[frames.kind == "response"]
    assert len(requests) == len(responses) > 0
    by_number = frames.set_index("frame")
    for _, response in responses.iterrows():
        request = by_number.loc[response.request_frame]
        assert request.response_frame == response.frame
        assert request.correlation_id == response.correlation_id and request.api_key == response.api_key
        assert response.client_id == request.client_id == "journal-test"
        assert response.latency_ms == request.latency_ms >= 0
        assert response.stream == request.stream and response.src == request.dst
    assert set(frames.api_name) >= {"ApiVersions", "Metadata", "Produce", "InitProducerId"}
    produce = frames[(frames.api_name == "Produce") & (frames.kind == "request")].iloc[0]
    assert produce.record_count == 1 and produce.topics == ["t"]
    assert produce.dst == broker.bootstrap_servers


def test_produce_frame_tree_tiles_its_bytes(broker):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type="gzip")
    producer.send("t", value=b"tiled" * 20, headers=[("a", b"b")], partition=1).get(20)
    producer.close()
    frame = next(f for f in broker.journal if f.api_name == "Produce" and f.kind == "request")
    assert frame.raw and len(frame.raw) == frame.size + 4
    assert_tiles(frame.tree, len(frame.raw))
    assert broker.frame(frame.frame) is frame
    response = broker.frame(frame.response_frame)
    assert response.kind == "response" and response.body["responses"][0]["partition_responses"][0]["error_code"] == 0


def test_journal_ring_is_bounded():
    with Broker(journal_size=10) as broker:
        for _ in range(3):
            producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
            producer.send("t", value=b"x").get(20)
            producer.close()
        frames = broker.frames
        assert len(frames) == 10 and frames.frame.is_monotonic_increasing and frames.frame.min() > 1
