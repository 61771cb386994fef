"""The core's speed tricks, in one place (issue 44, point 4).

Everything here trades a little plainness for time on the hot path of a fan-out (tens of
thousands of partitions stepped per event). Each trick says why it is safe and what it
was measured to gain; `tests/unit/test_speed.py` fails if one breaks the semantics it
stands in for. Value classes elsewhere in the core are plain frozen dataclasses and named
tuples: nobody editing them has to reason about object identity, except through the
helpers below.

`IdentityMemo`: a memo found again by the identity (`id()`) of the objects a value was
worked out from, for objects whose own hash or equality is too slow to key on (a
partition's broker view is a tuple of (broker, fact) pairs). An `id()` is unique only
while its object lives, so each entry holds the objects of its key: while the entry
exists none of them can die, and no other object can take one of their ids. A hit is
therefore always for the very objects the value was made from. At `bound` entries the
memo empties itself, which also releases the objects it held.

`quick_init`: a frozen dataclass's generated `__init__` stores each field with
`object.__setattr__`, looked up as a global on every call; a fan-out builds a dozen such
values per partition (the record, its leader-and-ISR, commands, output records).
`quick_init` gives the class an `__init__` with the same signature and defaults that
stores each field through its slot descriptor instead (generated with `exec`, once per
class at import). It is safe because the class stays a frozen, slotted dataclass:
assignment still raises, and `replace`, equality, hashing and `fields` are the
dataclass's own; it refuses what it could not preserve (`__post_init__`, keyword-only or
`init=False` fields, default factories, an unfrozen or unslotted class).
tests/unit/test_speed.py checks every class that uses it against the plain dataclass of
the same fields. Measured (issue 44, CPU seconds on the shared 2-core VM): a core value
costs 1.3x to 2x as much to build without it (LeaderAndIsr 2.8-3.5 against 4.1-4.5 us,
the 14-field LeaderAndIsrRecord 4.6-6.1 against 9.9-10.8 us, under load), and
`bench/fold_steps.py --partitions 10000 --repeat 3` took 1.56 s against 1.44 s (medians
of four alternated runs, 1.08x; 9 % when it was introduced). On this VM the benches
move by up to a quarter between runs of identical code, so the construction figures are
the firm ones.

`document_writer`: a function that turns a record into its contract document (a dict: a few
constants, the call's arguments, then each field, a tuple-typed field's tuple as a list),
generated with `exec` as one dict display. The fan-out's decisions all pass through it
(`outputs.to_contract`); the same work done with `attrgetter` and a loop over the tuple
fields took 2.1x as long (0.26 against 0.56 s for the 272,001 decisions of a
20,000-partition story), about 6 % of `bench/engine_steps.py`'s CPU time at that size (the
end-to-end runs could not resolve it). It is safe because the source is made from checked
identifiers only (field and argument names must be Python identifiers, keys are written
with `repr`, constants are passed as values, never as text), and tests/unit/test_speed.py
compares each record class's writer with the plain loop it stands in for, so a field added
to a record is written like the others.

`new_tuple`: `tuple.__new__`, which builds a named tuple from a tuple of its values without
the Python-level `__new__` the class's constructor runs. Used only by the metadata-log
reader, for the two tuples it builds per record of a log holding millions: the decoders'
generated code (`streaming/metadata_log/decoders.py`) builds each `MetadataRecord` (four
fields) with it, and `batches._records` each `LogRecord` (five). Without it in the
decoders `bench/metadata_log_decode.py --partitions 100000 --repeat 3 --distinct`
decoded 237,529 against 256,055 records a CPU second (medians of three alternated runs,
1.08x the time). In `_records` (issue 45) it saves 1,460 of the 14,650 machine
instructions that framing a record costs (valgrind's count, which the neighbours' load
does not move): 4.2 % of the bench's whole cost per record with `--distinct`, 6.3 %
without. The shortcut skips the constructor's check of the values' count, so
tests/unit/test_speed.py decodes every record type, and frames records with a key, a
null value and a timestamp of their own, and checks that each result is the tuple its
constructor builds from the same values, with exactly the class's fields.
"""

from __future__ import annotations

import dataclasses
import keyword
from collections.abc import Callable
from types import FunctionType
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")
V = TypeVar("V")

# see the module's docstring: (cls, values) -> cls's instance; the count is not checked
new_tuple: Callable[[type[Any], tuple[Any, ...]], Any] = tuple.__new__


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
    # the namespace of the generated function: field defaults and slot setters of any
    # type; its __name__ makes the function's __module__ this one (tests find it by that)
    env: dict[str, Any] = {"__name__": __name__}
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


class IdentityMemo(Generic[V]):
    """Values by the identity of the objects they were worked out from, holding them."""

    __slots__ = ("_entries", "bound")

    def __init__(self, bound: int) -> None:
        if bound < 1:
            raise ValueError(f"bound {bound}: must be at least 1")
        self.bound = bound
        # ids of the objects -> (the objects, the value): the objects keep the ids theirs
        self._entries: dict[tuple[int, ...], tuple[tuple[object, ...], V]] = {}

    def get(self, *objects: object) -> V | None:
        """The value put for these very objects (in this order), or None."""
        entry = self._entries.get(tuple(map(id, objects)))
        return None if entry is None else entry[1]

    def get_pair(self, a: object, b: object) -> V | None:
        """`get(a, b)` without the tuple of a variable count: the broker-view memo's lookup
        runs once per partition step."""
        entry = self._entries.get((id(a), id(b)))
        return None if entry is None else entry[1]

    def put(self, objects: tuple[object, ...], value: V) -> V:
        """Keep `value` for `objects` (holding them) and return it; a full memo empties
        first."""
        if len(self._entries) >= self.bound:
            self._entries.clear()
        self._entries[tuple(map(id, objects))] = (objects, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


def document_writer(
    constants: tuple[tuple[str, object], ...],
    arguments: tuple[str, ...],
    fields: tuple[tuple[str, bool], ...],
) -> Callable[..., dict[str, Any]]:
    """`write(r, *arguments)` -> `{**dict(constants), **{a: a for a in arguments}, name:
    r.name for each field}` in that key order (a later key of the same name replaces the
    value and keeps the first place, as in a dict display), where a field marked True
    whose value is a tuple is written as a list (None, or anything else, as it is)."""
    # names become source text: only plain identifiers, and no argument that would hide
    # a name the body reads
    for name in [*arguments, *(name for name, _ in fields)]:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"document_writer: {name!r} is not an identifier")
    for name in arguments:
        if name.startswith("_") or name in ("r", "list", "isinstance", "tuple"):
            raise ValueError(f"document_writer: argument {name!r} would hide a name it uses")
    env: dict[str, Any] = {
        "__name__": __name__,
        "list": list,
        "isinstance": isinstance,
        "tuple": tuple,
    }
    items: list[str] = []
    for i, (key, value) in enumerate(constants):
        env[f"_c{i}"] = value
        items.append(f"{key!r}: _c{i}")
    items += [f"{a!r}: {a}" for a in arguments]
    for name, listed in fields:
        read = f"(list(_v) if isinstance(_v := r.{name}, tuple) else _v)" if listed else f"r.{name}"
        items.append(f"{name!r}: {read}")
    source = f"def write(r, {', '.join(arguments)}):\n    return {{{', '.join(items)}}}\n"
    exec(source, env)
    write: Callable[..., dict[str, Any]] = env["write"]
    return write
