"""Kafka's error codes as a lookup table.

Almost every Kafka response carries one or more int16 ``error_code`` fields, and a bare number such as
``6`` or ``87`` tells a reader of a capture very little. This module turns those numbers into the names
Kafka gives them, says whether a client is expected to retry after seeing one, and adds a short note on
what each one means, so the dissector and the notebooks can print ``error_code: 6 (NOT_LEADER_OR_FOLLOWER)``.

The codes, the names and the retriable flag are protocol facts (checked against the ``Errors`` enum of
Apache Kafka and its published error table, which covers codes -1 to 133 as of Kafka 4.x); a code is
retriable when Kafka maps it to a subclass of ``RetriableException``. The one-line meanings are this
project's own summaries, not Kafka's messages.

Codes a future broker might send that are missing here are not an error: :func:`error_name` renders them
as ``UNKNOWN_ERROR_<code>`` and :func:`error_info` returns ``None``.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """One entry of the error table."""

    code: int
    name: str
    retriable: bool
    meaning: str


def _e(code: int, name: str, retriable: bool, meaning: str) -> ErrorInfo:
    return ErrorInfo(code, name, retriable, meaning)


R, F = True, False  # retriable / not retriable, to keep the rows below short

#: Every error code Kafka defines, in code order.
ERRORS: tuple[ErrorInfo, ...] = (
    _e(-1, "UNKNOWN_SERVER_ERROR", F, "The broker hit an unexpected failure it has no specific code for."),
    _e(0, "NONE", F, "Success: no error."),
    _e(1, "OFFSET_OUT_OF_RANGE", F, "The offset asked for lies outside the range the partition's log currently holds."),
    _e(2, "CORRUPT_MESSAGE", R, "A record failed its CRC check, has a bad size, lacks a key on a compacted topic, or is otherwise damaged."),
    _e(3, "UNKNOWN_TOPIC_OR_PARTITION", R, "This broker has no such topic or partition (it may not exist, or metadata is stale)."),
    _e(4, "INVALID_FETCH_SIZE", F, "The fetch asked for a byte size the broker will not accept."),
    _e(5, "LEADER_NOT_AVAILABLE", R, "The partition currently has no leader, typically while an election is under way."),
    _e(6, "NOT_LEADER_OR_FOLLOWER", R, "This broker is not the leader (or, for replica requests, not a replica) of the partition."),
    _e(7, "REQUEST_TIMED_OUT", R, "The broker gave up waiting for the request to complete (e.g. for acks from replicas)."),
    _e(8, "BROKER_NOT_AVAILABLE", F, "The broker referred to is not available."),
    _e(9, "REPLICA_NOT_AVAILABLE", R, "A replica of the partition is not available on the broker addressed."),
    _e(10, "MESSAGE_TOO_LARGE", F, "A record or batch exceeds the largest message size the broker or topic allows."),
    _e(11, "STALE_CONTROLLER_EPOCH", F, "The request came from a controller whose epoch is out of date; control has moved."),
    _e(12, "OFFSET_METADATA_TOO_LARGE", F, "The metadata string attached to an offset commit is longer than permitted."),
    _e(13, "NETWORK_EXCEPTION", R, "The connection dropped before a response arrived."),
    _e(14, "COORDINATOR_LOAD_IN_PROGRESS", R, "The coordinator is still loading its state and cannot serve the request yet."),
    _e(15, "COORDINATOR_NOT_AVAILABLE", R, "No coordinator is currently available for the group or transaction."),
    _e(16, "NOT_COORDINATOR", R, "The broker addressed is not the coordinator for this group or transactional id."),
    _e(17, "INVALID_TOPIC_EXCEPTION", F, "The topic name is illegal, or the operation is not allowed on this topic."),
    _e(18, "RECORD_LIST_TOO_LARGE", F, "A record batch is larger than the broker's configured log segment size."),
    _e(19, "NOT_ENOUGH_REPLICAS", R, "The write was refused because too few replicas are in sync (below min.insync.replicas)."),
    _e(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", R, "The write reached the log, but fewer in-sync replicas than required acknowledged it."),
    _e(21, "INVALID_REQUIRED_ACKS", F, "The produce request's acks value is not one the broker accepts."),
    _e(22, "ILLEGAL_GENERATION", F, "The group generation id in the request does not match the group's current generation."),
    _e(23, "INCONSISTENT_GROUP_PROTOCOL", F, "The member's protocol type or protocols do not fit those of the group (or are empty)."),
    _e(24, "INVALID_GROUP_ID", F, "The group id is empty or otherwise not acceptable."),
    _e(25, "UNKNOWN_MEMBER_ID", F, "The coordinator does not know the member id given."),
    _e(26, "INVALID_SESSION_TIMEOUT", F, "The session timeout lies outside the broker's allowed minimum/maximum."),
    _e(27, "REBALANCE_IN_PROGRESS", F, "The group is rebalancing; the member has to rejoin."),
    _e(28, "INVALID_COMMIT_OFFSET_SIZE", F, "The offset commit payload has an unacceptable size."),
    _e(29, "TOPIC_AUTHORIZATION_FAILED", F, "The principal is not allowed to perform this operation on the topic."),
    _e(30, "GROUP_AUTHORIZATION_FAILED", F, "The principal is not allowed to perform this operation on the group."),
    _e(31, "CLUSTER_AUTHORIZATION_FAILED", F, "The principal is not allowed to perform this cluster-level operation."),
    _e(32, "INVALID_TIMESTAMP", F, "A record timestamp falls outside the window the broker accepts."),
    _e(33, "UNSUPPORTED_SASL_MECHANISM", F, "The broker does not offer the SASL mechanism the client asked for."),
    _e(34, "ILLEGAL_SASL_STATE", F, "The request is not allowed at this point of the SASL exchange."),
    _e(35, "UNSUPPORTED_VERSION", F, "The broker does not support this version of the API."),
    _e(36, "TOPIC_ALREADY_EXISTS", F, "A topic of that name already exists."),
    _e(37, "INVALID_PARTITIONS", F, "The requested partition count is not valid (e.g. below 1)."),
    _e(38, "INVALID_REPLICATION_FACTOR", F, "The replication factor is below 1 or exceeds the number of available brokers."),
    _e(39, "INVALID_REPLICA_ASSIGNMENT", F, "The explicit replica assignment given is not valid."),
    _e(40, "INVALID_CONFIG", F, "A configuration name or value in the request is not valid."),
    _e(41, "NOT_CONTROLLER", R, "The node addressed is not the active controller."),
    _e(42, "INVALID_REQUEST", F, "The request is malformed or makes no sense to this broker; its log usually says why."),
    _e(43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", F, "The request needs a newer message format than the topic or broker uses."),
    _e(44, "POLICY_VIOLATION", F, "The request was rejected by a broker-side policy (e.g. a create-topic policy)."),
    _e(45, "OUT_OF_ORDER_SEQUENCE_NUMBER", F, "An idempotent producer's sequence number skipped ahead of what the broker expected."),
    _e(46, "DUPLICATE_SEQUENCE_NUMBER", F, "An idempotent producer's sequence number repeats one already written."),
    _e(47, "INVALID_PRODUCER_EPOCH", F, "The producer used an epoch that is older than the current one."),
    _e(48, "INVALID_TXN_STATE", F, "The transactional operation is not allowed in the transaction's current state."),
    _e(49, "INVALID_PRODUCER_ID_MAPPING", F, "The producer id is not the one currently bound to this transactional id."),
    _e(50, "INVALID_TRANSACTION_TIMEOUT", F, "The transaction timeout exceeds the broker's transaction.max.timeout.ms."),
    _e(51, "CONCURRENT_TRANSACTIONS", R, "Another operation on the same transaction is still in progress."),
    _e(52, "TRANSACTION_COORDINATOR_FENCED", F, "The transaction coordinator that sent the markers has been superseded."),
    _e(53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", F, "The principal is not allowed to use this transactional id."),
    _e(54, "SECURITY_DISABLED", F, "A security feature was requested but security is turned off on the broker."),
    _e(55, "OPERATION_NOT_ATTEMPTED", F, "The broker skipped this item of a batched request because another item failed."),
    _e(56, "KAFKA_STORAGE_ERROR", R, "The broker hit a disk error while accessing the log."),
    _e(57, "LOG_DIR_NOT_FOUND", F, "The log directory named is not one of the broker's configured log directories."),
    _e(58, "SASL_AUTHENTICATION_FAILED", F, "SASL authentication did not succeed (bad credentials or similar)."),
    _e(59, "UNKNOWN_PRODUCER_ID", F, "The broker holds no state for this producer id (e.g. its records have all expired)."),
    _e(60, "REASSIGNMENT_IN_PROGRESS", F, "The operation conflicts with a partition reassignment that is under way."),
    _e(61, "DELEGATION_TOKEN_AUTH_DISABLED", F, "Delegation tokens are not enabled on this cluster."),
    _e(62, "DELEGATION_TOKEN_NOT_FOUND", F, "No delegation token matches the one given."),
    _e(63, "DELEGATION_TOKEN_OWNER_MISMATCH", F, "The principal is neither the owner nor a renewer of the delegation token."),
    _e(64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", F, "Token requests are refused on this kind of connection (plaintext, one-way TLS, or token-authenticated)."),
    _e(65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", F, "The principal is not allowed to perform this delegation-token operation."),
    _e(66, "DELEGATION_TOKEN_EXPIRED", F, "The delegation token has expired."),
    _e(67, "INVALID_PRINCIPAL_TYPE", F, "The principal type given is not one the broker supports."),
    _e(68, "NON_EMPTY_GROUP", F, "The group still has members, so the operation (e.g. delete) is refused."),
    _e(69, "GROUP_ID_NOT_FOUND", F, "No group with that id exists."),
    _e(70, "FETCH_SESSION_ID_NOT_FOUND", R, "The incremental fetch session id is unknown to the broker (e.g. evicted)."),
    _e(71, "INVALID_FETCH_SESSION_EPOCH", R, "The fetch session epoch does not follow on from the previous request."),
    _e(72, "LISTENER_NOT_FOUND", R, "The leader has no listener matching the one the metadata request arrived on."),
    _e(73, "TOPIC_DELETION_DISABLED", F, "Deleting topics is turned off on this cluster."),
    _e(74, "FENCED_LEADER_EPOCH", R, "The leader epoch in the request is older than the broker's: the client's view is stale."),
    _e(75, "UNKNOWN_LEADER_EPOCH", R, "The leader epoch in the request is newer than the broker's: the broker lags behind."),
    _e(76, "UNSUPPORTED_COMPRESSION_TYPE", F, "The client cannot handle the compression codec used by this partition."),
    _e(77, "STALE_BROKER_EPOCH", F, "The broker epoch in the request no longer matches the broker's registration."),
    _e(78, "OFFSET_NOT_AVAILABLE", R, "A new leader's high watermark has not caught up, so offsets cannot be served safely yet."),
    _e(79, "MEMBER_ID_REQUIRED", F, "The join must be retried with the member id the coordinator has just handed out."),
    _e(80, "PREFERRED_LEADER_NOT_AVAILABLE", R, "The preferred replica cannot become leader right now."),
    _e(81, "GROUP_MAX_SIZE_REACHED", F, "The group already has the maximum number of members allowed."),
    _e(82, "FENCED_INSTANCE_ID", F, "A static member with this group.instance.id has re-registered under another member id."),
    _e(83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", R, "No replica eligible to lead the partition is available for the election."),
    _e(84, "ELECTION_NOT_NEEDED", R, "The partition already has the leader the election would pick."),
    _e(85, "NO_REASSIGNMENT_IN_PROGRESS", F, "There is no ongoing reassignment to cancel or change."),
    _e(86, "GROUP_SUBSCRIBED_TO_TOPIC", F, "Offsets cannot be deleted for a topic the group is still subscribed to."),
    _e(87, "INVALID_RECORD", F, "Broker-side validation rejected one or more records of the batch (Produce v8+ can say which)."),
    _e(88, "UNSTABLE_OFFSET_COMMIT", R, "Pending transactional offset commits must settle before offsets can be returned."),
    _e(89, "THROTTLING_QUOTA_EXCEEDED", R, "The request would exceed a controller mutation quota."),
    _e(90, "PRODUCER_FENCED", F, "A newer producer using the same transactional id has fenced this one off."),
    _e(91, "RESOURCE_NOT_FOUND", F, "The request names a resource that does not exist."),
    _e(92, "DUPLICATE_RESOURCE", F, "The request names the same resource more than once."),
    _e(93, "UNACCEPTABLE_CREDENTIAL", F, "The credential supplied does not meet the broker's requirements."),
    _e(94, "INCONSISTENT_VOTER_SET", F, "The sender or receiver of a KRaft voter request is not among the expected voters."),
    _e(95, "INVALID_UPDATE_VERSION", F, "The version level given in a feature update is not valid."),
    _e(96, "FEATURE_UPDATE_FAILED", F, "Finalized features could not be updated because of an unexpected server error."),
    _e(97, "PRINCIPAL_DESERIALIZATION_FAILURE", F, "A forwarded request's principal could not be deserialized (a broker security setup problem)."),
    _e(98, "SNAPSHOT_NOT_FOUND", F, "The KRaft snapshot asked for does not exist."),
    _e(99, "POSITION_OUT_OF_RANGE", F, "The position requested is negative or past the end of the snapshot."),
    _e(100, "UNKNOWN_TOPIC_ID", R, "This broker does not know a topic with that topic id."),
    _e(101, "DUPLICATE_BROKER_REGISTRATION", F, "Another broker has already registered with this broker id."),
    _e(102, "BROKER_ID_NOT_REGISTERED", F, "No broker has registered with the broker id given."),
    _e(103, "INCONSISTENT_TOPIC_ID", R, "The topic id in the request differs from the one stored with the partition's log."),
    _e(104, "INCONSISTENT_CLUSTER_ID", F, "The cluster id in the request differs from the one the receiver belongs to."),
    _e(105, "TRANSACTIONAL_ID_NOT_FOUND", F, "No transaction state exists for the transactional id given."),
    _e(106, "FETCH_SESSION_TOPIC_ID_ERROR", R, "The fetch session mixed topic ids and topic names inconsistently."),
    _e(107, "INELIGIBLE_REPLICA", F, "The proposed ISR includes a replica that may not join it (e.g. fenced or shutting down)."),
    _e(108, "NEW_LEADER_ELECTED", F, "The partition change was applied, but leadership moved to another broker meanwhile."),
    _e(109, "OFFSET_MOVED_TO_TIERED_STORAGE", F, "The offset requested now lives only in tiered (remote) storage."),
    _e(110, "FENCED_MEMBER_EPOCH", F, "The coordinator fenced the member's epoch; it must drop its partitions and rejoin."),
    _e(111, "UNRELEASED_INSTANCE_ID", F, "The static instance id is still held by another member, which has to leave first."),
    _e(112, "UNSUPPORTED_ASSIGNOR", F, "The group does not support the requested server-side assignor or its version range."),
    _e(113, "STALE_MEMBER_EPOCH", F, "The member epoch is behind; retry once the heartbeat returns the current epoch."),
    _e(114, "MISMATCHED_ENDPOINT_TYPE", F, "The request went to the wrong kind of endpoint (broker versus controller)."),
    _e(115, "UNSUPPORTED_ENDPOINT_TYPE", F, "The requested endpoint type is not supported yet."),
    _e(116, "UNKNOWN_CONTROLLER_ID", F, "No controller with that id is known."),
    _e(117, "UNKNOWN_SUBSCRIPTION_ID", F, "A telemetry push used a client-metrics subscription id that is unknown or out of date."),
    _e(118, "TELEMETRY_TOO_LARGE", F, "A telemetry push exceeds the size the broker will accept."),
    _e(119, "INVALID_REGISTRATION", F, "The controller judged the broker's registration to be invalid."),
    _e(120, "TRANSACTION_ABORTABLE", F, "The transaction hit an error; aborting it lets the producer keep its transactional id."),
    _e(121, "INVALID_RECORD_STATE", F, "A share-group acknowledgement referred to records in a state that cannot take it."),
    _e(122, "SHARE_SESSION_NOT_FOUND", R, "The broker has no share session matching the request."),
    _e(123, "INVALID_SHARE_SESSION_EPOCH", R, "The share session epoch does not match the one the broker expects."),
    _e(124, "FENCED_STATE_EPOCH", F, "The share coordinator refused the write because the share-group state epoch differs."),
    _e(125, "INVALID_VOTER_KEY", F, "The voter key (id and directory id) does not match the receiving replica's."),
    _e(126, "DUPLICATE_VOTER", F, "The voter being added is already in the voter set."),
    _e(127, "VOTER_NOT_FOUND", F, "The voter named is not in the voter set."),
    _e(128, "INVALID_REGULAR_EXPRESSION", F, "A subscription regular expression could not be parsed."),
    _e(129, "REBOOTSTRAP_REQUIRED", F, "The client's metadata is too stale; it must bootstrap its cluster view again."),
    _e(130, "STREAMS_INVALID_TOPOLOGY", F, "The Streams topology sent by the member is not valid."),
    _e(131, "STREAMS_INVALID_TOPOLOGY_EPOCH", F, "The Streams topology epoch sent by the member is not valid."),
    _e(132, "STREAMS_TOPOLOGY_FENCED", F, "The member's Streams topology epoch is older than the group's."),
    _e(133, "SHARE_SESSION_LIMIT_REACHED", R, "No new share session can be opened: the broker's session cache is full."),
)

del R, F

#: code -> entry
BY_CODE: Mapping[int, ErrorInfo] = MappingProxyType({e.code: e for e in ERRORS})
#: NAME -> entry
BY_NAME: Mapping[str, ErrorInfo] = MappingProxyType({e.name: e for e in ERRORS})

#: The codes as named constants, for code that answers or inspects errors: ``ErrorCode.NOT_LEADER_OR_FOLLOWER``
#: rather than a bare ``6``. Members are ints, so they go straight into response bodies and compare with
#: decoded values. Built from :data:`ERRORS`, so the table stays the one home of every code.
ErrorCode = IntEnum("ErrorCode", [(e.name, e.code) for e in ERRORS], module=__name__)

#: The largest code in the table.
MAX_CODE: int = max(BY_CODE)


def error_info(code: int) -> ErrorInfo | None:
    """The table entry for ``code``, or ``None`` when the code is not in the table."""
    return BY_CODE.get(code)


def error_name(code: int) -> str:
    """Kafka's name for ``code``; codes not in the table come back as ``UNKNOWN_ERROR_<code>``."""
    entry = BY_CODE.get(code)
    return entry.name if entry is not None else f"UNKNOWN_ERROR_{code}"


def is_retriable(code: int) -> bool:
    """Whether Kafka treats ``code`` as retriable (``False`` for codes not in the table)."""
    entry = BY_CODE.get(code)
    return entry.retriable if entry is not None else False


__all__ = ["ErrorCode", "ErrorInfo", "ERRORS", "BY_CODE", "BY_NAME", "MAX_CODE", "error_info", "error_name", "is_retriable"]
