"""Golden outputs: the SHA-256 of `simulate`'s decision bytes (and final state) for the
example logs, the scenario logs, generated logs and the benchmark's cluster story at
10,000 partitions, recorded before the core was restructured (issue 11). A restructuring
must leave every byte as it was; a change of behaviour updates `decisions.json` in the
same commit that explains it (`python -m tests.golden.test_golden_decisions --update`).

The digests are of the decisions without UpdateMetadata records
(`emit.update.metadata = false`), as they were recorded before UpdateMetadata existed;
`test_update_metadata_only_adds_records` holds the default to the same bytes plus its
UpdateMetadata records."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from state_machines.engine import Engine
from state_machines.events import parse_line
from state_machines.model import ControllerConfig
from tests.property.generator import generate_log

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("decisions.json")


def _bench_story(partitions: int) -> list[dict]:
    spec = importlib.util.spec_from_file_location(
        "engine_bench", ROOT / "bench" / "engine_bench.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    phases = module.cluster_log(10, partitions, 3, 100, full=True)
    return [e for events in phases.values() for e in events]


def logs() -> Iterator[tuple[str, list[bytes]]]:
    for path in sorted(
        [
            *(ROOT / "examples").glob("*.jsonl"),
            *(ROOT / "tests" / "scenarios" / "logs").glob("*.jsonl"),
        ]
    ):
        yield path.relative_to(ROOT).as_posix(), path.read_bytes().splitlines()
    for seed in range(16):
        yield f"generated-{seed}", [json.dumps(e).encode() for e in generate_log(seed, n_events=80)]
    yield "bench-10k", [json.dumps(e).encode() for e in _bench_story(10_000)]


NO_UPDATE_METADATA = ControllerConfig(emit_update_metadata=False)


def simulate(
    lines: list[bytes], config: ControllerConfig = NO_UPDATE_METADATA
) -> tuple[list[bytes], Engine]:
    """`simulate --out`'s lines for the log, and the engine after it."""
    engine = Engine(config)
    out: list[bytes] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            env = parse_line(line, i)
        except Exception:
            continue
        out.extend(
            json.dumps(record, separators=(",", ":")).encode() for record in engine.process(env)
        )
    return out, engine


def digest(lines: list[bytes]) -> dict[str, object]:
    """What `simulate --out --state-out` would write, hashed."""
    records, engine = simulate(lines)
    out = hashlib.sha256(b"".join(r + b"\n" for r in records))
    state = hashlib.sha256(
        json.dumps(engine.state_json(), indent=2, sort_keys=True).encode()
    ).hexdigest()
    return {"records": len(records), "decisions_sha256": out.hexdigest(), "state_sha256": state}


ALL = dict(logs())


@pytest.mark.parametrize("name", sorted(ALL))
def test_simulate_writes_the_golden_bytes(name: str) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert name in golden, (
        f"no golden output for {name}: run python -m tests.golden.test_golden_decisions --update"
    )
    assert digest(ALL[name]) == golden[name]


@pytest.mark.parametrize("name", [n for n in sorted(ALL) if n != "bench-10k"])
def test_update_metadata_only_adds_records(name: str) -> None:
    """With UpdateMetadata (the default) the decisions are the golden ones, in the same
    order, with UpdateMetadata records among them, and the final state is the same."""
    without, engine_without = simulate(ALL[name])
    with_, engine_with = simulate(ALL[name], ControllerConfig())
    assert [r for r in with_ if not r.startswith(b'{"v":1,"type":"UpdateMetadata"')] == without
    assert engine_with.state_json() == engine_without.state_json()


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python -m tests.golden.test_golden_decisions --update")
    GOLDEN.write_text(
        json.dumps({name: digest(lines) for name, lines in ALL.items()}, indent=1, sort_keys=True)
        + "\n"
    )
    print(f"wrote {GOLDEN}")
