"""kafkalab: a lab for the Apache Kafka wire protocol.

The codec lives in :mod:`kafkalab.protocol` (sans-IO, every API key and version); the dissector's text and
table views in :mod:`kafkalab.dissect`; the command line in :mod:`kafkalab.cli`.
"""
__version__ = "0.1.0"
