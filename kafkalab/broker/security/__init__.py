"""The broker's security, sans-IO: SASL sessions and SCRAM credentials (the asyncio adapter only says which
listener a connection arrived on)."""
from .credentials import ScramUsers
from .sasl import MECHANISMS, SaslFailure, SaslSession

__all__ = ["MECHANISMS", "SaslFailure", "SaslSession", "ScramUsers"]
