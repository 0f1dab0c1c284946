"""TLS for the SSL and SASL_SSL listeners: the server's ssl.SSLContext, from given files or a self-signed
certificate made at start with the ``openssl`` binary (no Python crypto dependency).

The self-signed certificate is its own CA: clients pass it as their CA file (``Broker.ca_file``). It names
localhost and 127.0.0.1 so clients that verify host names accept it. Files go under ``data_dir/tls`` when the
broker has a data directory, else in a temporary directory removed when the broker stops. TLS is the
transport's business only: the dispatcher, and so the journal, see the plaintext frames.
"""
from __future__ import annotations

import ipaddress
import os
import shutil
import ssl
import subprocess
import tempfile


class TlsFiles:
    """The certificate and key a TLS listener serves; ``cleanup`` removes what this object generated."""

    def __init__(self, certfile: str | None = None, keyfile: str | None = None, data_dir: str | None = None,
                 host: str = "127.0.0.1") -> None:
        self._temporary: str | None = None
        if certfile:
            self.certfile, self.keyfile = certfile, keyfile or certfile
            return
        if data_dir:
            where = os.path.join(data_dir, "tls")
            os.makedirs(where, exist_ok=True)
        else:
            where = self._temporary = tempfile.mkdtemp(prefix="kafkalab-tls-")
        self.certfile, self.keyfile = os.path.join(where, "broker-cert.pem"), os.path.join(where, "broker-key.pem")
        if not (os.path.exists(self.certfile) and os.path.exists(self.keyfile)):
            self_signed(self.certfile, self.keyfile, host)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certfile, self.keyfile)
        return context

    def cleanup(self) -> None:
        if self._temporary:
            shutil.rmtree(self._temporary, ignore_errors=True)


def self_signed(certfile: str, keyfile: str, host: str) -> None:
    """A P-256 key and a certificate valid for 30 days naming localhost, 127.0.0.1 and ``host``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("a TLS listener needs a certificate: install openssl, or pass tls_cert= and tls_key=")
    names = ["DNS:localhost", "IP:127.0.0.1"]
    if host not in ("", "0.0.0.0", "::", "localhost", "127.0.0.1"):
        try:
            names.append(f"IP:{ipaddress.ip_address(host)}")
        except ValueError:
            names.append(f"DNS:{host}")
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", keyfile, "-out", certfile, "-days", "30", "-subj", "/CN=kafkalab broker",
                    "-addext", "subjectAltName=" + ",".join(names), "-addext", "basicConstraints=critical,CA:TRUE"],
                   check=True, capture_output=True, timeout=30)
