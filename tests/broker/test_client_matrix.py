"""The client x flow matrix: which test shows each real client doing each flow against the broker.

Every (client, flow) cell names the one test that runs that flow with that client (no flow is written twice),
or says why the client cannot do it. The tests here fail if a cell is missing or names a test that does not
exist; the named tests themselves run with the rest of the suite. To see every cell pass or fail::

    python -m tests.broker.test_client_matrix          # runs the named tests, prints the matrix

Flows (none needs SASL): produce (keyed records with headers, read back), admin (create, grow, describe,
configure, delete topics), compression (every codec the client has), timestamps (producer timestamps and
offsets for times), idempotent (InitProducerId, gapless sequences), groups (two-member rebalance, disjoint
assignment, commit, leave, resume from the committed offsets), commit/abort (transactions), isolation
(read_committed versus read_uncommitted), consume-transform-produce (send_offsets_to_transaction).
"""
from __future__ import annotations

import importlib
import os
import sys

import pytest

CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka", "kcat", "kafkajs")
FLOWS = ("produce", "admin", "compression", "timestamps", "idempotent", "groups", "commit/abort", "isolation",
         "consume-transform-produce")
NOT_A_CLIENT_FEATURE = "n/a:"

_KP, _CK, _AIO, _KCAT, _JS = ("test_broker_kafka_python", "test_broker_confluent", "test_broker_aiokafka",
                              "test_broker_kcat", "test_broker_kafkajs")
_GROUPS, _TXN, _TXN_JS, _IDEM = ("test_broker_groups", "test_broker_transactions",
                                 "test_broker_transactions_kafkajs", "test_broker_idempotent")

MATRIX: dict[tuple[str, str], str] = {
    ("kafka-python", "produce"): f"{_KP}::test_kafka_python_keyed_records_with_headers_by_assignment",
    ("kafka-python", "admin"): f"{_KP}::test_kafka_python_admin_describe_alter_partitions_delete",
    ("kafka-python", "compression"): f"{_KP}::test_kafka_python_compression_round_trip",
    ("kafka-python", "timestamps"): f"{_KP}::test_kafka_python_timestamps_and_offsets_for_times",
    ("kafka-python", "idempotent"): f"{_IDEM}::test_kafka_python_idempotent_produce",
    ("kafka-python", "groups"): f"{_GROUPS}::test_kafka_python_group",
    ("kafka-python", "commit/abort"): f"{_TXN}::test_kafka_python_commit_abort_and_isolation",
    ("kafka-python", "isolation"): f"{_TXN}::test_kafka_python_commit_abort_and_isolation",
    ("kafka-python", "consume-transform-produce"): f"{_TXN}::test_kafka_python_consume_transform_produce_and_fencing",

    ("confluent-kafka", "produce"): f"{_CK}::test_confluent_keyed_records_with_headers_by_assignment",
    ("confluent-kafka", "admin"): f"{_CK}::test_confluent_admin_describe_alter_partitions_delete",
    ("confluent-kafka", "compression"): f"{_CK}::test_confluent_compression_round_trip",
    ("confluent-kafka", "timestamps"): f"{_CK}::test_confluent_timestamps_and_offsets_for_times",
    ("confluent-kafka", "idempotent"): f"{_IDEM}::test_confluent_idempotent_produce",
    ("confluent-kafka", "groups"): f"{_GROUPS}::test_confluent_group",
    ("confluent-kafka", "commit/abort"): f"{_TXN}::test_confluent_commit_abort_and_isolation",
    ("confluent-kafka", "isolation"): f"{_TXN}::test_confluent_commit_abort_and_isolation",
    ("confluent-kafka", "consume-transform-produce"):
        f"{_TXN}::test_confluent_consume_transform_produce_as_a_group_member",

    ("aiokafka", "produce"): f"{_AIO}::test_aiokafka_keyed_records_headers_timestamps_by_assignment",
    ("aiokafka", "admin"): f"{_AIO}::test_aiokafka_admin_create_describe_alter_delete",
    ("aiokafka", "compression"): f"{_AIO}::test_aiokafka_compression_round_trip",
    ("aiokafka", "timestamps"): f"{_AIO}::test_aiokafka_offsets_for_times",
    ("aiokafka", "idempotent"): f"{_IDEM}::test_aiokafka_idempotent_produce",
    ("aiokafka", "groups"): f"{_GROUPS}::test_aiokafka_group",
    ("aiokafka", "commit/abort"): f"{_TXN}::test_aiokafka_commit_abort_isolation_and_consume_transform_produce",
    ("aiokafka", "isolation"): f"{_TXN}::test_aiokafka_commit_abort_isolation_and_consume_transform_produce",
    ("aiokafka", "consume-transform-produce"):
        f"{_TXN}::test_aiokafka_commit_abort_isolation_and_consume_transform_produce",

    ("kcat", "produce"): f"{_KCAT}::test_kcat_keyed_records_with_headers_by_partition",
    ("kcat", "admin"): "n/a: kcat has no admin requests (-L lists metadata only)",
    ("kcat", "compression"): f"{_KCAT}::test_kcat_compression_round_trip",
    ("kcat", "timestamps"): f"{_KCAT}::test_kcat_offsets_for_times",
    ("kcat", "idempotent"): f"{_IDEM}::test_kcat_idempotent_produce",
    ("kcat", "groups"): f"{_GROUPS}::test_kcat_balanced_consumer_group",
    ("kcat", "commit/abort"): "n/a: kcat cannot produce transactionally",
    ("kcat", "isolation"): f"{_TXN}::test_kcat_reads_committed_or_uncommitted",
    ("kcat", "consume-transform-produce"): "n/a: kcat cannot produce transactionally",

    ("kafkajs", "produce"): f"{_JS}::test_kafkajs_keyed_records_headers_timestamps_gzip",
    ("kafkajs", "admin"): f"{_JS}::test_kafkajs_admin",
    ("kafkajs", "compression"): f"{_JS}::test_kafkajs_keyed_records_headers_timestamps_gzip",   # gzip: its only codec
    ("kafkajs", "timestamps"): f"{_JS}::test_kafkajs_offsets_for_times",
    ("kafkajs", "idempotent"): f"{_JS}::test_kafkajs_idempotent_producer_read_back",
    ("kafkajs", "groups"): f"{_JS}::test_kafkajs_group_rebalance_commit_leave_resume",
    ("kafkajs", "commit/abort"): f"{_TXN_JS}::test_kafkajs_transactions",
    ("kafkajs", "isolation"): f"{_TXN_JS}::test_kafkajs_transactions",
    ("kafkajs", "consume-transform-produce"): f"{_TXN_JS}::test_kafkajs_transactions",
}

HERE = os.path.dirname(os.path.abspath(__file__))


def checks() -> dict[tuple[str, str], str]:
    """The cells a client can do, each with its test."""
    return {cell: test for cell, test in MATRIX.items() if not test.startswith(NOT_A_CLIENT_FEATURE)}


@pytest.mark.parametrize("client", CLIENTS)
def test_every_flow_of_every_client_has_a_cell(client):
    missing = [flow for flow in FLOWS if (client, flow) not in MATRIX]
    assert not missing, f"{client}: no test and no reason for {missing}"


@pytest.mark.parametrize("cell", sorted(checks()), ids="/".join)
def test_each_cell_names_a_test_of_that_client(cell):
    module_name, function = checks()[cell].split("::")
    module = importlib.import_module(module_name)
    assert callable(getattr(module, function, None)), f"{cell}: {module_name} has no {function}"
    client_words = {"kafka-python": "kafka_python", "confluent-kafka": "confluent", "aiokafka": "aiokafka",
                    "kcat": "kcat", "kafkajs": "kafkajs"}
    assert client_words[cell[0]] in function, f"{cell}: {function} is not a {cell[0]} test"


def test_the_matrix_has_no_stray_cells():
    assert set(MATRIX) <= {(c, f) for c in CLIENTS for f in FLOWS}


def table(outcomes: dict[str, str] | None = None) -> str:
    """The matrix as a Markdown table: each cell the outcome of its test (or its test's name), or n/a."""
    def cell(client, flow):
        test = MATRIX[(client, flow)]
        if test.startswith(NOT_A_CLIENT_FEATURE):
            return "n/a"
        return (outcomes or {}).get(test, "?")
    lines = ["| flow | " + " | ".join(CLIENTS) + " |", "|---" * (len(CLIENTS) + 1) + "|"]
    lines += ["| " + flow + " | " + " | ".join(cell(c, flow) for c in CLIENTS) + " |" for flow in FLOWS]
    return "\n".join(lines)


class _Outcomes:
    """A pytest plugin that folds each named test's outcomes (all its parameters) into pass or FAIL."""

    def __init__(self) -> None:
        self.by_test: dict[str, str] = {}

    def pytest_runtest_logreport(self, report) -> None:
        path, _, name = report.nodeid.partition("::")
        test = os.path.splitext(os.path.basename(path))[0] + "::" + name.split("[")[0]
        if report.failed:
            self.by_test[test] = "FAIL"
        elif report.when == "call" and report.passed:
            self.by_test.setdefault(test, "pass")
        elif report.skipped:
            self.by_test.setdefault(test, "skip")


def test_the_readme_shows_this_matrix():
    """The README's table is this matrix with every cell passing (as the closing run printed it)."""
    readme = open(os.path.join(HERE, "..", "..", "README.md")).read()
    assert table({test: "pass" for test in checks().values()}) in readme


def main() -> int:
    outcomes = _Outcomes()
    tests = sorted(set(checks().values()))
    code = pytest.main(["-q", "-p", "no:cacheprovider", *[os.path.join(HERE, t.replace("::", ".py::", 1))
                                                            for t in tests]], plugins=[outcomes])
    print(table(outcomes.by_test))
    passed = sum(outcomes.by_test.get(t) == "pass" for t in checks().values())
    print(f"\n{passed} of {len(checks())} client x flow checks pass")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
