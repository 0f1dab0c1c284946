"""Where schemas are found: API key <-> name, the spec of each API, and the header specs.

Schema files ship inside the package (``apis/*.json``, ``headers.json``) and are parsed on first use, once,
each API's file when that API is first asked for (a reader of a capture uses a few of the ninety-odd APIs).
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from ..errors import UnknownApiError, UnsupportedVersionError
from .api_keys import schema_files
from .model import ApiSpec, MessageSpec, api_from_json, message_from_data

_PACKAGE = resources.files(__package__)


@lru_cache(maxsize=1)
def _files() -> dict:
    """API key -> its schema file (see :func:`.api_keys.schema_files`), listed once."""
    return schema_files()


@lru_cache(maxsize=None)
def _api(api_key: int) -> ApiSpec:
    spec = api_from_json(_files()[api_key].read_text(encoding="utf-8"))
    if spec.api_key != api_key:
        raise ValueError(f"schema file {_files()[api_key].name} defines API key {spec.api_key}")
    return spec


def _all_apis() -> dict[int, ApiSpec]:
    return {key: _api(key) for key in _files()}


@lru_cache(maxsize=1)
def _names() -> dict[str, int]:
    return {spec.name.lower(): key for key, spec in _all_apis().items()}


def api_keys() -> list[int]:
    """Every API key the schema defines, ascending."""
    return list(_files())


def all_apis() -> list[ApiSpec]:
    return list(_all_apis().values())


def resolve_api_key(api: int | str) -> int:
    """An API key from a key or a name ("Produce", "produce", "ProduceRequest")."""
    if isinstance(api, int) and not isinstance(api, bool):
        if api in _files():
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
    return _api(resolve_api_key(api))


def api_name(api_key: int) -> str:
    return _api(api_key).name if api_key in _files() else f"Unknown({api_key})"


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
