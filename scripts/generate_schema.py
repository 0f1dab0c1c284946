#!/usr/bin/env python3
"""Generate kafkalab's own schema files from Apache Kafka's message definitions.

Run once when Kafka adds versions; the output (kafkalab/protocol/schema/apis/*.json and headers.json) is
committed, so kafkalab never needs the sources at run or test time.

    python scripts/generate_schema.py --specs ../shared/kafka-message-specs

Sources, most preferred first for any (api, version) that several define:
  1. kafka-4.3-clients/          client APIs at their Kafka 4.3 ranges
  2. apache-kafka-2024-10/       every API key 0-87 from v0
  3. apache-kafka-2024-12-extra/ keys 88-89
  4. the `kio` package (optional) for versions none of the above define (keys 90-92, a few newer versions)

How: each source is *materialised* per version (the exact field list a given version has on the wire), the
preferred source is picked per version, and the per-version lists are folded back into one field tree whose
version properties are inclusive [low, high] ranges. The folding fails loudly if a field's type changes
between versions or a range would have holes, so a surprising source is noticed, not silently encoded.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import typing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kafkalab.protocol.schema.naming import snake_case  # noqa: E402

PRIMITIVES = {"int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid",
              "string", "bytes", "records"}
ZERO = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0, "float64": 0.0,
        "bool": False, "uuid": "00000000-0000-0000-0000-000000000000", "string": "", "bytes": b"",
        "records": None}
SOURCE_DIRS = ("kafka-4.3-clients", "apache-kafka-2024-10", "apache-kafka-2024-12-extra")


# ---------------------------------------------------------------- Kafka JSON definitions

def load_definition(path: Path) -> dict:
    text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M)
    return json.loads(text)


def parse_range(text: str | None, top: int = 999) -> range:
    """Kafka's "3+", "0-5", "2", "none" as a range."""
    if not text or text == "none":
        return range(0)
    if text.endswith("+"):
        return range(int(text[:-1]), top + 1)
    low, _, high = text.partition("-")
    return range(int(low), int(high or low) + 1)


def parse_default(raw, wire_type: str):
    if raw is None:
        return None
    if raw == "null":
        return None
    if wire_type in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return int(raw, 0) if isinstance(raw, str) else int(raw)
    if wire_type == "float64":
        return float(raw)
    if wire_type == "bool":
        return raw in (True, "true")
    return raw


def materialise_kafka_fields(fields: list[dict], version: int, structs: dict) -> list[dict]:
    out = []
    for f in fields:
        if version not in parse_range(f.get("versions")):
            continue
        kafka_type = f["type"]
        item = {"name": snake_case(f["name"]), "kafka_name": f["name"]}
        is_array = kafka_type.startswith("[]")
        base = kafka_type[2:] if is_array else kafka_type
        if base in PRIMITIVES:
            item["type"] = "array" if is_array else base
            if is_array:
                item["items"] = base
        else:
            item["type"] = "array" if is_array else "struct"
            if is_array:
                item["items"] = "struct"
            children = f.get("fields") or structs[base]
            item["fields"] = materialise_kafka_fields(children, version, structs)
        item["nullable"] = version in parse_range(f.get("nullableVersions"))
        tagged = version in parse_range(f.get("taggedVersions"))
        item["tag"] = int(f["tag"]) if tagged else None
        if f.get("flexibleVersions") == "none":
            item["flexible_never"] = True
        if f.get("ignorable"):
            item["ignorable"] = True
        if "entityType" in f:
            item["entity"] = f["entityType"]
        if base in PRIMITIVES and not is_array:
            item["default"] = parse_default(f.get("default"), base)
        elif f.get("default") == "null":
            item["default"] = None
        out.append(item)
    return out


def kafka_messages(specs: Path) -> dict:
    """{(api_key, kind): {version: (flexible, fields)}} with the most preferred source per version."""
    found: dict = {}
    for source in reversed(SOURCE_DIRS):  # later (preferred) sources overwrite earlier ones
        folder = specs / source
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            spec = load_definition(path)
            kind = spec.get("type")
            if kind not in ("request", "response"):
                continue
            structs = collect_structs(spec)
            flexible = parse_range(spec.get("flexibleVersions"))
            per_version = found.setdefault((spec["apiKey"], kind), {})
            for version in parse_range(spec["validVersions"]):
                per_version[version] = (version in flexible,
                                        materialise_kafka_fields(spec["fields"], version, structs),
                                        spec["name"][: -len(kind)])
    return found


def collect_structs(spec: dict) -> dict:
    structs = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}

    def visit(fields):
        for f in fields:
            if "fields" in f:
                name = f["type"][2:] if f["type"].startswith("[]") else f["type"]
                structs.setdefault(name, f["fields"])
                visit(f["fields"])
    visit(spec.get("fields", []))
    return structs


# ---------------------------------------------------------------- kio fallback

KIO_TYPES = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64",
             "datetime_i64": "int64"}


def materialise_kio_entity(cls, neighbour: list[dict] | None, adopt_names: bool = True) -> list[dict]:
    """Field list of a kio dataclass; kio drops the Ms suffix of duration fields, so names are matched
    against the neighbouring Kafka-defined version when there is one (whose entity types, ignorable flags
    and null defaults are kept too: kio does not carry them)."""
    hints = typing.get_type_hints(cls)
    known = {f["name"]: f for f in neighbour or []}
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        kafka_type = f.metadata.get("kafka_type")
        nullable = type(None) in typing.get_args(hint) and typing.get_origin(hint) is not tuple
        if nullable:
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        name = f.name
        if not adopt_names:
            if kafka_type in ("timedelta_i32", "timedelta_i64"):
                name += "_ms"
        elif kafka_type in ("timedelta_i32", "timedelta_i64", "datetime_i64") or name not in known:
            for candidate in (name + "_ms", name):
                if candidate in known:
                    name = candidate
                    break
            else:
                if kafka_type in ("timedelta_i32", "timedelta_i64"):
                    name += "_ms"
        item = {"name": name, "kafka_name": None}
        child_neighbour = (known.get(name) or {}).get("fields")
        if typing.get_origin(hint) is tuple:
            element = typing.get_args(hint)[0]
            item["type"] = "array"
            if nullable and f.default is None:
                item["default"] = None
            if kafka_type:
                item["items"] = KIO_TYPES.get(kafka_type, kafka_type)
            else:
                item["items"] = "struct"
                item["fields"] = materialise_kio_entity(element, child_neighbour, adopt_names)
        elif kafka_type:
            item["type"] = KIO_TYPES.get(kafka_type, kafka_type)
            default = f.default if f.default is not dataclasses.MISSING else None
            item["default"] = default if isinstance(default, (int, float, str, bool)) else None
            if item["type"] == "uuid" or item["type"] == "records":
                item["default"] = None
        else:
            item["type"] = "struct"
            item["fields"] = materialise_kio_entity(hint, child_neighbour, adopt_names)
        # kio models the all-zero UUID as None; Kafka's uuid type itself is never nullable
        item["nullable"] = nullable and item["type"] != "uuid"
        item["tag"] = f.metadata.get("tag")
        twin = known.get(name)
        if twin is not None and twin["type"] == item["type"]:
            for key in ("entity", "ignorable"):
                if key in twin:
                    item[key] = twin[key]
            if item["nullable"] and "default" in twin and twin["default"] is None:
                item["default"] = None
            if item.get("default") is None and twin.get("default") is not None and not item["nullable"]:
                item["default"] = twin["default"]
        out.append(item)
    return out


# APIs whose definitions in the 2024 snapshots are pre-release drafts (share groups, KIP-932; streams groups,
# KIP-1071) or were renamed later (Vote's Candidate* fields became Replica* in Kafka 4.x): for these, the
# versions kio carries (generated from a newer Kafka) replace the snapshots' versions.
PREFER_KIO = {52, 76, 77, 78, 79, 83, 84, 85, 86, 87, 88, 89}


def add_kio_versions(found: dict, reference: dict) -> None:
    try:
        from kio.index import load_payload_module  # noqa: F401
        from kio.schema.index import api_key_map, schema_name_map
    except ImportError:
        print("kio is not installed: versions no Kafka source defines are skipped", file=sys.stderr)
        return
    import importlib
    for key_text, info in reference.items():
        api_key = int(key_text)
        name = api_key_map.get(api_key)
        for kind in ("request", "response"):
            per_version = found.setdefault((api_key, kind), {})
            for version in range(info["min"], info["max"] + 1):
                if not name or (version in per_version and api_key not in PREFER_KIO):
                    continue
                path = schema_name_map.get(name, {}).get(version, {})
                entity_path = next((p for t, p in path.items() if t.name == kind), None)
                if entity_path is None:
                    continue
                module_name, _, cls_name = entity_path.partition(":")
                cls = getattr(importlib.import_module(module_name), cls_name)
                nearest = min(per_version, key=lambda v: abs(v - version), default=None)
                neighbour = per_version[nearest][1] if nearest is not None else None
                adopt_names = api_key != 52   # Vote: kio's (Kafka 4.x) Replica* names for every version
                per_version[version] = (bool(cls.__flexible__),
                                        materialise_kio_entity(cls, neighbour, adopt_names), info["name"])


# ---------------------------------------------------------------- folding versions into ranges

def fold(per_version: dict[int, list[dict]]) -> list[dict]:
    """Fold {version: [materialised field]} into one field list with [low, high] ranges."""
    order: list[str] = []
    for version in sorted(per_version):
        previous = None
        for f in per_version[version]:
            if f["name"] not in order:
                position = order.index(previous) + 1 if previous else 0
                order.insert(position, f["name"])
            previous = f["name"]
    folded = []
    for name in order:
        seen = {v: next(f for f in fields if f["name"] == name)
                for v, fields in per_version.items() if any(f["name"] == name for f in fields)}
        folded.append(fold_field(name, seen))
    return folded


def fold_field(name: str, seen: dict[int, dict]) -> dict:
    first = seen[min(seen)]
    for version, f in seen.items():
        if (f["type"], f.get("items")) != (first["type"], first.get("items")):
            raise SystemExit(f"field {name}: type changes at v{version}: {f['type']} vs {first['type']}")
    out = {"name": name, "type": first["type"]}
    if "items" in first:
        out["items"] = first["items"]
    out["versions"] = as_range(name, seen)
    nullable = {v for v, f in seen.items() if f["nullable"]}
    if nullable:
        out["nullable"] = as_range(name + " nullable", nullable)
    tagged = {v: f["tag"] for v, f in seen.items() if f["tag"] is not None}
    if tagged:
        if len(set(tagged.values())) != 1:
            raise SystemExit(f"field {name}: tag changes across versions")
        out["tag"] = next(iter(tagged.values()))
        out["tagged"] = as_range(name + " tagged", tagged)
    defaults = {repr(f.get("default")) for f in seen.values()}
    default = next((f.get("default") for f in seen.values() if f.get("default") is not None), None)
    if first["type"] in ZERO and default is not None and default != ZERO[first["type"]]:
        out["default"] = default
    elif first["type"] in ("string", "bytes", "array", "struct", "uuid", "records") and \
            all(f.get("default", "missing") is None for f in seen.values()) and nullable:
        out["default"] = None
    del defaults
    if any(f.get("flexible_never") for f in seen.values()):
        out["flexible_never"] = True
    if any(f.get("ignorable") for f in seen.values()):
        out["ignorable"] = True
    entity = next((f["entity"] for f in seen.values() if f.get("entity")), None)
    if entity:
        out["entity"] = entity
    kafka_name = next((f["kafka_name"] for f in seen.values() if f.get("kafka_name")), None)
    if kafka_name and snake_case(kafka_name) != name:
        out["kafka_name"] = kafka_name
    if first["type"] == "struct" or first.get("items") == "struct":
        out["fields"] = fold({v: f["fields"] for v, f in seen.items()})
    return out


def as_range(what: str, versions) -> list[int]:
    low, high = min(versions), max(versions)
    if len(set(versions)) != high - low + 1:
        raise SystemExit(f"{what}: versions {sorted(versions)} are not one contiguous range")
    return [low, high]


def message_entry(per_version: dict) -> dict:
    versions = sorted(per_version)
    flexible = [v for v in versions if per_version[v][0]]
    if flexible and flexible != list(range(flexible[0], versions[-1] + 1)):
        raise SystemExit("flexible versions are not a suffix")
    return {"versions": [versions[0], versions[-1]], "flexible": flexible[0] if flexible else None,
            "fields": fold({v: per_version[v][1] for v in versions})}


def render(value, indent: str = "") -> str:
    """JSON with one field per line: scalar properties inline, nested field lists indented below."""
    if isinstance(value, dict) and "type" in value and "fields" not in value:
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict) and "fields" in value:
        head = ", ".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
                         for k, v in value.items() if k != "fields")
        inner = indent + " "
        fields = (",\n").join(inner + render(f, inner) for f in value["fields"])
        body = f'"fields": [\n{fields}\n{indent}]' if value["fields"] else '"fields": []'
        return "{" + (head + ", " if head else "") + body + "}"
    if isinstance(value, dict):
        inner = indent + " "
        items = (",\n").join(f"{inner}{json.dumps(k)}: {render(v, inner)}" for k, v in value.items())
        return "{\n" + items + "\n" + indent + "}"
    return json.dumps(value, ensure_ascii=False)


def write_json(path: Path, data) -> None:
    text = render(data)
    assert json.loads(text) == data
    path.write_text(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=Path, required=True)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parents[1] / "kafkalab/protocol/schema")
    args = parser.parse_args()
    reference = json.loads((args.specs / "reference-api-versions.json").read_text())
    found = kafka_messages(args.specs)
    add_kio_versions(found, reference)
    apis_dir = args.out / "apis"
    apis_dir.mkdir(parents=True, exist_ok=True)
    for old in apis_dir.glob("*.json"):
        old.unlink()
    total = 0
    for key_text, info in sorted(reference.items(), key=lambda kv: int(kv[0])):
        api_key = int(key_text)
        entry = {"api_key": api_key, "name": info["name"]}
        for kind in ("request", "response"):
            per_version = {v: found[(api_key, kind)][v] for v in range(info["min"], info["max"] + 1)
                           if v in found.get((api_key, kind), {})}
            missing = sorted(set(range(info["min"], info["max"] + 1)) - set(per_version))
            if missing:
                raise SystemExit(f"{info['name']} {kind}: no source defines versions {missing}")
            entry[kind] = message_entry(per_version)
            total += len(per_version)
        write_json(apis_dir / f"{api_key:03d}_{snake_case(info['name'])}.json", entry)
    headers = {}
    for name in ("RequestHeader", "ResponseHeader"):
        spec = load_definition(args.specs / "apache-kafka-2024-10" / f"{name}.json")
        flexible = parse_range(spec.get("flexibleVersions"))
        per_version = {v: (v in flexible, materialise_kafka_fields(spec["fields"], v, {}), name)
                       for v in parse_range(spec["validVersions"])}
        headers[snake_case(name)] = message_entry(per_version)
    write_json(args.out / "headers.json", headers)
    print(f"wrote {len(reference)} APIs, {total} (api, version, kind) schemas to {apis_dir}")


if __name__ == "__main__":
    main()
