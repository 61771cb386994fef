"""A partition named on the command line: `TOPIC-P`, or Kafka's tools' `--topic T
--partition P`. Shared by `inspect` and `timeline`."""

from __future__ import annotations

import argparse

from streaming.exits import UsageError


def parse_topic_partition(text: str) -> tuple[str, int]:
    topic, sep, p = text.rpartition("-")
    if not sep or not topic or not p.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not TOPIC-PARTITION (e.g. orders-0)")
    return topic, int(p)


def checked_partition(text: str) -> str:
    """TOPIC-P, or a partition number (of --topic): the `type` of a --partition flag."""
    if not text.isdigit():
        parse_topic_partition(text)
    return text


def partition_names(args: argparse.Namespace) -> list[str]:
    """The partitions named by --partition TOPIC-P, or by --topic T --partition P (Kafka's
    tools' way), as TOPIC-P."""
    given = (
        args.partition
        if isinstance(args.partition, list)
        else [args.partition]
        if args.partition
        else []
    )
    topic = args.topic
    for p in given:
        if topic is not None and not p.isdigit():
            raise UsageError(
                f"--partition {p}: with --topic, give the partition number (--topic "
                f"{topic} --partition 0)"
            )
        if topic is None and p.isdigit():
            raise UsageError(f"--partition {p}: name the topic too, as TOPIC-{p} or with --topic")
    return [f"{topic}-{p}" for p in given] if topic is not None else list(given)
