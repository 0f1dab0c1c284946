"""What every handler module shares: the registry entry, the request context and the long-poll result.

A handler is ``handle(ctx, body) -> dict | Wait | Offload | None``: the response body, a :class:`Wait` (the
response is not ready: the server retries ``attempt`` when data arrives and once more at the deadline), an
:class:`Offload` (work for a worker thread first), or None (no response at all: Produce with acks=0).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafkalab.protocol import ErrorCode

from ..security.authorizer import CLUSTER_NAME, OP, RESOURCE, WILDCARD
from ..security.sasl import ANONYMOUS


@dataclass(frozen=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    handle: Callable[[RequestContext, dict], Any]


@dataclass
class RequestContext:
    state: Any                  # BrokerState
    registry: dict[int, Handler]
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    now_ms: int
    local_host: str = ""
    local_port: int = 0
    stream: int = 0
    client_address: str = ""    # "ip:port" of the client (group members report it as their host)
    session: Any = None         # the connection's security.SaslSession (principal, client host, SASL exchange)

    def allowed(self, operation: str, resource_type: str, name: str = CLUSTER_NAME) -> bool:
        """May this connection's principal do ``operation`` ("READ", "WRITE"...) on the resource
        (``resource_type`` "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID")? The one authorization call."""
        principal, host = self._who()
        return self.state.authorizer.allowed(principal, host, OP[operation], RESOURCE[resource_type], name)

    def authorized_operations(self, resource_type: str, name: str = CLUSTER_NAME) -> int:
        """The authorized-operations bit field for Metadata, DescribeGroups and DescribeCluster."""
        principal, host = self._who()
        return self.state.authorizer.authorized_operations(principal, host, RESOURCE[resource_type], name)

    @property
    def principal(self) -> str:
        """Who sent this request ("User:alice"; User:ANONYMOUS on a listener without SASL)."""
        return self._who()[0]

    def throttle(self, key: str, nbytes: int) -> int:
        """Count bytes against this client's quota ``key`` (producer_byte_rate, consumer_byte_rate): the
        throttle_time_ms to answer with. The connection is then muted for that long (KIP-219)."""
        principal, _ = self._who()
        delay = self.state.quotas.record(key, principal.partition(":")[2], self.client_id or "", nbytes, self.now_ms)
        if delay and self.session is not None:
            self.session.mute_ms = max(self.session.mute_ms, delay)
        return delay

    def transaction(self, transactional_id: str, producer_id: int, producer_epoch: int):
        """The transaction coordinator's (metadata, error) for a producer, after the authorization Kafka asks
        of every transactional request: WRITE on the transactional id."""
        if not self.allowed("WRITE", "TRANSACTIONAL_ID", transactional_id or ""):
            return None, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return self.state.transactions.lookup(transactional_id, producer_id, producer_epoch)

    def _who(self) -> tuple[str, str]:
        if self.session is None:
            return ANONYMOUS, WILDCARD
        return self.session.principal or ANONYMOUS, self.session.host


@dataclass
class Wait:
    """A response that waits for data: ``attempt(now_ms, final)`` returns the body, or None to keep waiting."""
    max_wait_ms: int
    attempt: Callable[[int, bool], dict | None]


@dataclass
class Offload:
    """CPU-heavy work to run off the event loop (inflating a hostile wrapper must not stall other clients):
    ``work()`` runs in a worker thread and must not touch broker state; ``then(result)`` runs back on the
    loop and returns what a handler returns."""
    work: Callable[[], Any]
    then: Callable[[Any], Any]
