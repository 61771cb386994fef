"""Kinds of setting value: each check takes (name, value) and returns the value to use, or
raises `SettingError` naming the setting and what it must be. `schema.SCHEMA` gives every
setting its kind."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from ..exits import UsageError


class SettingError(UsageError):
    """A setting that does not exist, or a value that is not of its kind."""


Check = Callable[[str, Any], Any]


def boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SettingError(f"{name} must be true or false, got {value!r}")


def integer(minimum: int) -> Callable[[str, Any], int]:
    def check(name: str, value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        try:
            if isinstance(value, (bool, float)):
                raise ValueError
            number = int(value)
        except (TypeError, ValueError):
            raise SettingError(f"{name} must be a whole number, got {value!r}") from None
        if number < minimum:
            raise SettingError(f"{name} must be at least {minimum}, got {number}")
        return number

    return check


count = integer(0)


def auto_count(name: str, value: Any) -> int | None:
    """A count, or "auto" (None): the job chooses."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    try:
        return count(name, value)
    except SettingError:
        raise SettingError(f"{name} must be auto or a whole number, got {value!r}") from None


def cap(name: str, value: Any) -> int | None:
    """A count where 0 means no cap."""
    return count(name, value) or None


def port(name: str, value: Any) -> int | None:
    """A TCP port to listen on; 0 means off."""
    number = count(name, value)
    if number > 65535:
        raise SettingError(f"{name} must be a TCP port (1-65535, or 0 for none), got {value!r}")
    return number or None


def metadata_version(name: str, value: Any) -> str:
    """A KRaft metadata.version Kafka knows ("3.9-IV0", or a release such as "3.7")."""
    from state_machines.kraft.metadata_version import MetadataVersion

    if not isinstance(value, str):
        raise SettingError(f'{name} must be a metadata.version such as "3.9-IV0", got {value!r}')
    try:
        return MetadataVersion.from_version_string(value.strip()).value
    except ValueError:
        known = ", ".join(v.value for v in MetadataVersion)
        raise SettingError(f"{name}: unknown metadata.version {value!r} (known: {known})") from None


def seconds(name: str, value: Any) -> float:
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value)
    except (TypeError, ValueError):
        raise SettingError(f"{name} must be a number of seconds, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise SettingError(f"{name} must be a positive number of seconds, got {value!r}")
    return number


def text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise SettingError(f"{name} must be a string, got {value!r}")


def choice(*options: str) -> Check:
    def check(name: str, value: Any) -> str:
        if value not in options:
            raise SettingError(f"{name} must be {' or '.join(options)}, got {value!r}")
        return str(value)

    return check


def location(name: str, value: Any) -> str:
    """Where the job reads or writes: `kafka`, or `file:DIR`."""
    if value == "kafka" or (
        isinstance(value, str) and value.startswith("file:") and value[5:].strip()
    ):
        return str(value)
    raise SettingError(f"{name} must be kafka or file:DIR, got {value!r}")


def input_location(name: str, value: Any) -> str:
    """Where the job reads its events: `kafka`, `file:DIR`, or `metadata-log:DIR` (a KRaft
    cluster's `__cluster_metadata-0` directory, followed as it grows)."""
    if isinstance(value, str) and value.startswith("metadata-log:") and value[13:].strip():
        return value
    try:
        return location(name, value)
    except SettingError:
        raise SettingError(
            f"{name} must be kafka, file:DIR or metadata-log:DIR, got {value!r}"
        ) from None


def offsets(name: str, value: Any) -> str:
    """Spark's startingOffsets: earliest, latest, or {"topic": {"partition": offset}}."""
    if value in ("earliest", "latest"):
        return str(value)
    try:
        doc = json.loads(value) if isinstance(value, str) else value
        ok = isinstance(doc, dict) and all(
            isinstance(parts, dict)
            and all(p.lstrip("-").isdigit() and type(o) is int for p, o in parts.items())
            for parts in doc.values()
        )
    except ValueError:
        ok = False
    if not ok:
        raise SettingError(
            f'{name} must be earliest, latest or JSON like {{"topic": {{"0": 42}}}}, got {value!r}'
        )
    return value if isinstance(value, str) else json.dumps(value)


# Spark's interval units (IntervalUtils.stringToInterval, singular or plural; no
# abbreviations); a processing-time trigger refuses months and years.
_INTERVAL = re.compile(
    r"(interval\s+)?(\d+(\.\d+)?\s*(week|day|hour|minute|second|millisecond|microsecond)s?\s*)+",
    re.IGNORECASE,
)


def interval(name: str, value: Any) -> str:
    if not (isinstance(value, str) and _INTERVAL.fullmatch(value.strip())):
        raise SettingError(
            f"{name} must be an interval like '1 second' or '500 milliseconds', got {value!r}"
        )
    return value
