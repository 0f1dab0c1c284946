"""The record batches' checksum: the crc32c package's C function, loaded without the package's ``__init__``
(whose look-up of its own version in the installed packages' metadata costs more than a capture's
checksums), and the same function a later ``import crc32c`` gives."""
from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from kafkalab.protocol.records import checksum
first = checksum.crc32c(b"123456789")
metadata = "importlib.metadata" in sys.modules
import crc32c
print(first, metadata, checksum.crc32c(b"123456789"), crc32c.crc32c(b"123456789"), crc32c.crc32c(b"x" * 1000),
      checksum.crc32c(memoryview(b"x" * 1000)))
"""


def test_the_checksum_is_crc32c_without_reading_the_installed_packages_metadata():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout.split()
    first, metadata, again, package, long_package, long_view = out
    assert int(first) == int(again) == int(package) == 0xE3069283      # the standard check value of CRC-32C
    assert long_package == long_view
    assert metadata == "False"
