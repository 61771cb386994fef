"""The JSON writers the encodings share: two encoders built once, and the pieces the
templates of the hot paths write by hand (record_codec.py, command_codec.py, decision_json.py).

`json.dumps` builds an encoder per call when given options, so the compact writer (as the
contract writes records) and the canonical one (the same, keys sorted, so that one value
always has the same bytes) are built here once.
"""

from __future__ import annotations

import json

compact_json = json.JSONEncoder(separators=(",", ":")).encode
canonical_json = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode

json_str = json.encoder.encode_basestring_ascii


def json_opt(value: str | None) -> str:
    return "null" if value is None else json_str(value)


# A cluster has few distinct replica lists and ISRs, and every record written holds several.
_INTS: dict[tuple[int, ...], str] = {}


def json_ints(values: tuple[int, ...]) -> str:
    try:
        text = _INTS.get(values)
    except TypeError:  # a list
        return f"[{','.join(map(str, values))}]"
    if text is None:
        if len(_INTS) >= 65536:
            _INTS.clear()
        text = _INTS[values] = f"[{','.join(map(str, values))}]"
    return text
