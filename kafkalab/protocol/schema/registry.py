"""Where schemas are found: API key <-> name, the spec of each API, and the header specs.

Schema files ship inside the package (``apis/*.json``, ``headers.json``) and are parsed on first use, once.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from ..errors import UnknownApiError, UnsupportedVersionError
from .model import ApiSpec, MessageSpec, api_from_json, message_from_data

_PACKAGE = resources.files(__package__)


@lru_cache(maxsize=1)
def _all_apis() -> dict[int, ApiSpec]:
    specs = {}
    for entry in _PACKAGE.joinpath("apis").iterdir():
        if entry.name.endswith(".json"):
            spec = api_from_json(entry.read_text(encoding="utf-8"))
            specs[spec.api_key] = spec
    return dict(sorted(specs.items()))


@lru_cache(maxsize=1)
def _names() -> dict[str, int]:
    return {spec.name.lower(): key for key, spec in _all_apis().items()}


def api_keys() -> list[int]:
    """Every API key the schema defines, ascending."""
    return list(_all_apis())


def all_apis() -> list[ApiSpec]:
    return list(_all_apis().values())


def resolve_api_key(api: int | str) -> int:
    """An API key from a key or a name ("Produce", "produce", "ProduceRequest")."""
    if isinstance(api, int) and not isinstance(api, bool):
        if api in _all_apis():
            return api
        raise UnknownApiError(f"unknown API key {api}")
    text = str(api).strip().lower()
    for suffix in ("request", "response"):
        if text.endswith(suffix) and text[: -len(suffix)] in _names():
            text = text[: -len(suffix)]
    if text.isdigit():
        return resolve_api_key(int(text))
    try:
        return _names()[text]
    except KeyError:
        raise UnknownApiError(f"unknown API {api!r}") from None


def api_spec(api: int | str) -> ApiSpec:
    return _all_apis()[resolve_api_key(api)]


def api_name(api_key: int) -> str:
    spec = _all_apis().get(api_key)
    return spec.name if spec else f"Unknown({api_key})"


def message_spec(api: int | str, kind: str, api_version: int) -> MessageSpec:
    """The request or response spec of an API, checking that the version exists."""
    spec = api_spec(api).message(kind)
    if not spec.has_version(api_version):
        low, high = spec.versions
        raise UnsupportedVersionError(
            f"{spec.api_name} v{api_version} is not a known version (v{low}-v{high})")
    return spec


@lru_cache(maxsize=1)
def _headers() -> dict[str, MessageSpec]:
    data = json.loads(_PACKAGE.joinpath("headers.json").read_text(encoding="utf-8"))
    return {"request": message_from_data(data["request_header"], "RequestHeader", "header"),
            "response": message_from_data(data["response_header"], "ResponseHeader", "header")}


def header_spec(kind: str) -> MessageSpec:
    return _headers()[kind]
