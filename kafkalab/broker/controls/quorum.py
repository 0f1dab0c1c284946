"""The KRaft quorum of the in-process cluster (KIP-595, KIP-853): which nodes vote, who leads, each voter's
directory id and listeners. Sans-IO.

At first the lowest node id is the one voter and the leader (the controller); AddRaftVoter makes an observer
(another node of the cluster) a voter, RemoveRaftVoter takes one out (if it led, leadership passes to the next
voter and the leader epoch grows, as an election would), UpdateRaftVoter records a voter's new listeners.
Kafka's errors: DUPLICATE_VOTER, VOTER_NOT_FOUND, and INVALID_REQUEST for removing the last voter or adding a
node that is not in the cluster (Kafka waits for such an observer to catch up and times out).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafkalab.protocol import ErrorCode

NO_DIRECTORY = uuid.UUID(int=0)


@dataclass
class Voter:
    directory_id: uuid.UUID = NO_DIRECTORY
    listeners: list[dict] = field(default_factory=list)     # [{"name", "host", "port"}]; [] = the node's own


@dataclass
class Quorum:
    voters: dict[int, Voter]
    leader: int
    epoch: int = 1

    @classmethod
    def first_of(cls, node_ids: list[int]) -> Quorum:
        return cls({node_ids[0]: Voter()}, node_ids[0])

    def add(self, node_ids: list[int], voter_id: int, directory_id: uuid.UUID,
            listeners: list[dict]) -> tuple[int, str | None]:
        if voter_id in self.voters:
            return ErrorCode.DUPLICATE_VOTER, f"Node {voter_id} is already a voter."
        if voter_id not in node_ids:
            return ErrorCode.INVALID_REQUEST, f"Node {voter_id} is not an observer of this cluster ({node_ids})."
        self.voters[voter_id] = Voter(directory_id, list(listeners))
        return ErrorCode.NONE, None

    def remove(self, voter_id: int, directory_id: uuid.UUID) -> tuple[int, str | None]:
        voter = self.voters.get(voter_id)
        if voter is None or directory_id not in (voter.directory_id, NO_DIRECTORY):
            return ErrorCode.VOTER_NOT_FOUND, f"Node {voter_id} with directory {directory_id} is not a voter."
        if len(self.voters) == 1:
            return ErrorCode.INVALID_REQUEST, "The last voter cannot be removed."
        del self.voters[voter_id]
        if voter_id == self.leader:
            self.leader, self.epoch = min(self.voters), self.epoch + 1
        return ErrorCode.NONE, None

    def update(self, voter_id: int, directory_id: uuid.UUID, leader_epoch: int,
               listeners: list[dict]) -> int:
        if leader_epoch > self.epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        if 0 <= leader_epoch < self.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        voter = self.voters.get(voter_id)
        if voter is None or directory_id not in (voter.directory_id, NO_DIRECTORY):
            return ErrorCode.VOTER_NOT_FOUND
        voter.listeners = list(listeners)
        if directory_id != NO_DIRECTORY:
            voter.directory_id = directory_id
        return ErrorCode.NONE
