"""Kafka for the job, on confluent-kafka (Spark's JVM connector cannot be downloaded here).

- `source.py`: `kafka-py`, a source (and sink) on Spark's Python Data Source API; it plans
  with `offsets.py`, reads with `reader.py`, takes Spark's option names (`options.py`) and
  waits out a broker that does not answer (`outage.py`); `sink.py` is its writer;
- `producer.py`: a producer that accounts for every record (the sink, the job's decisions,
  `produce`, the bridge);
- `decisions.py`: the job's decisions and dead letters, written from the driver;
- `client.py`: the clients' quiet log and error sorting; `errors.py`: the errors.

Dependencies go one way: source -> sink -> producer -> errors.
"""
