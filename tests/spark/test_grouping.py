"""Which connections share a decode task: one group per client host, both ends joined when the ports do not
say which end is the client (so the host's requests on other connections are always in its group)."""
from __future__ import annotations

from kafkalab.spark.packets import connection_key
from kafkalab.spark.pipeline import group_of_connections


def key(a, b):
    return connection_key((None, 0, a[0], a[1], b[0], b[1]))


def test_connections_of_one_client_host_share_a_group_and_other_hosts_do_not():
    one = key(("10.0.0.1", 40000), ("10.0.0.9", 9092))
    two = key(("10.0.0.9", 9093), ("10.0.0.1", 40001))       # the other direction, another broker port
    other = key(("10.0.0.2", 40000), ("10.0.0.9", 9092))
    groups = group_of_connections([one, two, other], [])
    assert groups[one] == groups[two] != groups[other]


def test_a_connection_whose_ports_do_not_name_the_client_joins_both_hosts_groups():
    a = key(("10.0.0.1", 40000), ("10.0.0.9", 9092))
    b = key(("10.0.0.2", 40000), ("10.0.0.9", 9092))
    unknown = key(("10.0.0.1", 5555), ("10.0.0.2", 6666))      # Kafka found by its traffic, either end
    assert len(set(group_of_connections([a, b], []).values())) == 2
    groups = group_of_connections([a, b, unknown], [])
    assert groups[a] == groups[b] == groups[unknown]
    assert len(set(group_of_connections([a, b, unknown], [5555]).values())) == 2     # -p 5555: 10.0.0.2 is the client
