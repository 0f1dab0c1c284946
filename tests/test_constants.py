"""The named constants are the schema's and the error table's own: every API and every code, no more."""
from __future__ import annotations

from kafkalab.protocol import ApiKey, ErrorCode, api_keys, api_name, encode_request, decode_request
from kafkalab.protocol.schema.error_codes import ERRORS
from kafkalab.protocol.schema.naming import snake_case


def test_every_schema_api_has_its_constant_and_no_other():
    assert [int(key) for key in ApiKey] == api_keys()
    for key in ApiKey:
        assert key.name == snake_case(api_name(key)).upper()


def test_every_error_code_has_its_constant_and_no_other():
    assert {(e.name, e.code) for e in ERRORS} == {(member.name, int(member)) for member in ErrorCode}
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6 and ErrorCode(-1).name == "UNKNOWN_SERVER_ERROR"


def test_constants_encode_as_the_numbers_they_name():
    frame = encode_request(ApiKey.METADATA, 12, {"topics": None}, correlation_id=1)
    request = decode_request(frame)
    assert request.api_key == ApiKey.METADATA == 3 and type(request.api_key) is int


def _literal_constants(tree) -> list[tuple[str, int]]:
    """Module-level ``NAME = 3`` (or ``A, B = 1, 2``) assignments of int literals."""
    import ast

    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            values = value.elts if isinstance(value, ast.Tuple) else [value]
            for name, item in zip(names, values):
                try:
                    number = ast.literal_eval(item)
                except ValueError:
                    continue
                if isinstance(name, ast.Name) and type(number) is int:
                    found.append((name.id, number))
    return found


def test_no_module_keeps_its_own_copy_of_an_error_code_or_api_key():
    """Error codes and API keys have one home (``ErrorCode``, ``ApiKey``): a module may alias them
    (``PRODUCE = int(ApiKey.PRODUCE)``), never restate the number, nor register a handler by a bare number."""
    import ast
    import pathlib
    import re

    import kafkalab

    root = pathlib.Path(kafkalab.__file__).parent
    not_codes = {("protocol/records/compression.py", "NONE")}      # the codec id 0, not an error code
    copies = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        source = path.read_text()
        for name, number in _literal_constants(ast.parse(source)):
            for enum in (ErrorCode, ApiKey):
                if name in enum.__members__ and enum[name] == number and (where, name) not in not_codes:
                    copies.append(f"{where}: {name} = {number}")
        copies += [f"{where}: Handler({m.group(1)}, ...)" for m in re.finditer(r"\bHandler\((\d+),", source)]
    assert copies == []
