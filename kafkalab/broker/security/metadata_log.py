"""Security state that survives a restart: SCRAM credentials, ACLs and client quotas as KRaft metadata records.

Owns: the ``__cluster_metadata-0`` log under the data directory (never a topic clients see, as in KRaft),
turning each change of :class:`~.credentials.ScramUsers`, :class:`~.authorizer.Authorizer` and
:class:`~.quotas.ClientQuotas` into the record Kafka's controller writes for it (UserScramCredentialRecord /
RemoveUserScramCredentialRecord, AccessControlEntryRecord / RemoveAccessControlEntryRecord, ClientQuotaRecord;
layouts in ``protocol/schema/payloads``, framing in :mod:`kafkalab.protocol.metadata_records`), the id each
ACL is known by, and replaying the log into the three at start. Must not know: requests, sockets, clocks.

Why Kafka's records: a notebook decoding the log sees the same story a KRaft controller's log tells, and a
credential is stored only as Kafka stores it - salt, StoredKey, ServerKey, iterations - so no file in the data
directory ever holds a password. Each change is appended (and flushed) as it happens, so a killed process
loses none that was answered. Without a data directory nothing is written: the state lives in memory only.
"""
from __future__ import annotations

import logging
import os
import uuid

from kafkalab.protocol import ProtocolError
from kafkalab.protocol.metadata_records import decode_metadata_record, encode_metadata_record
from kafkalab.protocol.records import RecordBatch, build_batch, decode_records, encode_records

from ..storage.log import PartitionLog
from .authorizer import AclBinding
from .scram import MECHANISM_CODES, ScramCredential

log = logging.getLogger("kafkalab.broker")

METADATA_LOG = "__cluster_metadata-0"
SEGMENT_BYTES = 8 * 1024 * 1024
READ_CHUNK = 1 << 20
MECHANISMS = {code: name for name, code in MECHANISM_CODES.items()}
ACL_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")


class SecurityLog:
    """Attach with :meth:`attach`; the three stores then call back here on every change."""

    def __init__(self, data_dir: str | None) -> None:
        self.log = None if data_dir is None else PartitionLog.open(os.path.join(data_dir, METADATA_LOG),
                                                                   SEGMENT_BYTES)
        self.acl_ids: dict[AclBinding, uuid.UUID] = {}

    def attach(self, users, authorizer, quotas) -> None:
        """Replay what the log holds into the (empty) stores, then listen to their changes."""
        if self.log is not None:
            self._replay(users, authorizer, quotas)
            users.listener = authorizer.listener = quotas.listener = self

    def close(self) -> None:
        if self.log is not None:
            self.log.close()

    # --- changes, as records ------------------------------------------------------------------------

    def credential_changed(self, user: str, mechanism: str, credential: ScramCredential | None) -> None:
        if credential is None:
            self._append("remove_user_scram_credential_record",
                         {"name": user, "mechanism": MECHANISM_CODES[mechanism]})
        else:
            self._append("user_scram_credential_record", {
                "name": user, "mechanism": MECHANISM_CODES[mechanism], "salt": credential.salt,
                "stored_key": credential.stored_key, "server_key": credential.server_key,
                "iterations": credential.iterations})

    def acl_added(self, acl: AclBinding) -> None:
        acl_id = self.acl_ids[acl] = uuid.uuid4()
        self._append("access_control_entry_record", {"id": acl_id, **{f: getattr(acl, f) for f in ACL_FIELDS}})

    def acl_removed(self, acl: AclBinding) -> None:
        acl_id = self.acl_ids.pop(acl, None)
        if acl_id is not None:
            self._append("remove_access_control_entry_record", {"id": acl_id})

    def quota_changed(self, entity, key: str, value: float | None) -> None:
        self._append("client_quota_record", {
            "entity": [{"entity_type": kind, "entity_name": name} for kind, name in entity], "key": key,
            "value": 0.0 if value is None else value, "remove": value is None})

    def _append(self, name: str, fields: dict) -> None:
        value = encode_metadata_record(name, fields)
        self.log.append(encode_records([build_batch([(None, value)])]))
        self.log.flush()

    # --- start -------------------------------------------------------------------------------------------

    def _replay(self, users, authorizer, quotas) -> None:
        by_id: dict[uuid.UUID, AclBinding] = {}
        for value in self._values():
            try:
                record = decode_metadata_record(value)
            except ProtocolError as exc:
                log.warning("%s: skipping a record kafkalab does not read: %s", METADATA_LOG, exc)
                continue
            kind, mechanism = record["type"], MECHANISMS.get(record.get("mechanism"))
            if kind.endswith("user_scram_credential_record") and mechanism is None:
                log.warning("%s: skipping a credential of unknown SCRAM mechanism %s", METADATA_LOG,
                            record["mechanism"])
            elif kind == "user_scram_credential_record":
                users.put(record["name"], ScramCredential(mechanism, record["salt"], record["iterations"],
                                                          record["stored_key"], record["server_key"]))
            elif kind == "remove_user_scram_credential_record":
                users.delete(record["name"], mechanism)
            elif kind == "access_control_entry_record":
                acl = by_id[record["id"]] = AclBinding(*(record[f] for f in ACL_FIELDS))
                authorizer.add(acl)
            elif kind == "remove_access_control_entry_record":
                acl = by_id.pop(record["id"], None)
                if acl is not None:
                    authorizer.acls = [a for a in authorizer.acls if a != acl]
            elif kind == "client_quota_record":
                entity = tuple((e["entity_type"], e["entity_name"]) for e in record["entity"])
                quotas.alter(entity, [{"key": record["key"], "value": record["value"], "remove": record["remove"]}])
        self.acl_ids = {acl: acl_id for acl_id, acl in by_id.items()}

    def _values(self):
        offset = self.log.log_start_offset
        while offset < self.log.next_offset:
            data = self.log.read(offset, READ_CHUNK)
            if not data:
                return
            for batch in decode_records(data):
                if not isinstance(batch, RecordBatch) or batch.partial:
                    return
                yield from (r.value for r in batch.records if r.value is not None)
                offset = batch.last_offset + 1
