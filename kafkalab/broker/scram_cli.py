"""``kafkalab users``: list, set and delete a running broker's SCRAM users over the wire, with
AlterUserScramCredentials and DescribeUserScramCredentials (the password is salted here; only the salted
password travels, as with Kafka's ``kafka-configs --alter --add-config SCRAM-SHA-256=[...]``)."""
from __future__ import annotations

import argparse
import secrets
import socket
import sys

from kafkalab.protocol import ErrorCode, decode_response, encode_request, error_name

from .security.scram import HASHES, MECHANISM_CODES, MIN_ITERATIONS, salted_password

EXIT_OK, EXIT_FAILED = 0, 1
_NAMES = {code: name for name, code in MECHANISM_CODES.items()}


def _call(sock: socket.socket, api: str, body: dict, correlation_id: int) -> dict:
    sock.sendall(encode_request(api, 0, body, correlation_id=correlation_id, client_id="kafkalab-users"))
    head = _exactly(sock, 4)
    return decode_response(head + _exactly(sock, int.from_bytes(head, "big")), api, 0).body


def _exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        out += chunk
    return bytes(out)


def _upsertions(args) -> list[dict]:
    mechanisms = tuple(HASHES) if args.mechanism == "both" else (args.mechanism,)
    out = []
    for name, password in args.set or ():
        for mechanism in mechanisms:
            salt = secrets.token_bytes(16)
            out.append({"name": name, "mechanism": MECHANISM_CODES[mechanism], "iterations": args.iterations,
                        "salt": salt, "salted_password": salted_password(mechanism, password, salt, args.iterations)})
    return out


def cmd_scram_users(args: argparse.Namespace) -> int:
    host, _, port = args.bootstrap.rpartition(":")
    failed = False
    with socket.create_connection((host.strip("[]"), int(port)), timeout=args.timeout) as sock:
        deletions = [{"name": name, "mechanism": MECHANISM_CODES[m]} for name in args.delete or () for m in HASHES]
        for i, (key, changes) in enumerate((("upsertions", _upsertions(args)), ("deletions", deletions)), 1):
            if changes:
                body = {"upsertions": [], "deletions": [], key: changes}
                for result in _call(sock, "AlterUserScramCredentials", body, i)["results"]:
                    if result["error_code"] not in (ErrorCode.NONE, ErrorCode.RESOURCE_NOT_FOUND):
                        failed = True
                        print(f"{result['user']}: {error_name(result['error_code'])} {result['error_message'] or ''}",
                              file=sys.stderr)
        described = _call(sock, "DescribeUserScramCredentials", {"users": None}, 9)
    if described["error_code"]:
        print(f"kafkalab: {error_name(described['error_code'])}", file=sys.stderr)
        return EXIT_FAILED
    for result in described["results"]:
        held = ", ".join(f"{_NAMES.get(c['mechanism'], c['mechanism'])} ({c['iterations']} iterations)"
                         for c in result["credential_infos"])
        print(f"{result['user']}: {held}")
    return EXIT_FAILED if failed else EXIT_OK


def parse_user(text: str) -> tuple[str, str]:
    name, sep, password = text.partition(":")
    if not sep or not name or not password:
        raise argparse.ArgumentTypeError("expected NAME:PASSWORD, e.g. alice:alice-secret")
    return name, password


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("users", help="list, set or delete a running broker's SCRAM users")
    parser.add_argument("--bootstrap", required=True, metavar="HOST:PORT", help="the broker's PLAINTEXT listener")
    parser.add_argument("--set", metavar="NAME:PASSWORD", type=parse_user, action="append", help="create or change")
    parser.add_argument("--delete", metavar="NAME", action="append", help="remove every SCRAM credential of NAME")
    parser.add_argument("--mechanism", choices=("both", *HASHES), default="both")
    parser.add_argument("--iterations", type=int, default=MIN_ITERATIONS)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.set_defaults(func=cmd_scram_users)
    return parser
