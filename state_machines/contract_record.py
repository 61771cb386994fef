"""The base of the contract's output records (outputs.py): a record's key and body.

A record is a value without its envelope; the engine adds `v`, `cause_offset`, `cause_id`
and `seq` (docs/contract.md). Its own module so that the records of every seam (outputs.py,
update_metadata_records.py, appended_record.py) share it without importing each other.
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from typing import Any, ClassVar


@cache
def field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names: dataclasses.fields() is slow enough to matter on the hot
    paths that turn records, commands and decisions into documents."""
    return tuple(f.name for f in fields(cls))


class ContractRecord:
    TYPE: ClassVar[str]

    def key(self) -> str:
        return f"{self.topic}-{self.partition}"  # type: ignore[attr-defined]

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        # as a plain `type`: mypy checks `type[ContractRecord]` against the cache's Hashable with
        # the instance's `__hash__` (python/mypy#11470)
        cls: type = type(self)
        for name in field_names(cls):
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out
