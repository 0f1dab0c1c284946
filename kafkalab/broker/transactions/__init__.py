"""Transactions (KIP-98): the coordinator of transactional ids, its state machine and its state log.

:mod:`.machine` holds the rules (states and the transition table), :mod:`.coordinator` applies them to the
broker (markers, offsets, timeouts), :mod:`.state_log` keeps them in ``__transaction_state``. The partition
side (open transactions, the last stable offset, the aborted-transaction index) lives in the partition log.
"""
from .coordinator import TransactionCoordinator, for_version
from .machine import Event, TransactionMetadata, TxnState

__all__ = ["TransactionCoordinator", "TransactionMetadata", "TxnState", "Event", "for_version"]
