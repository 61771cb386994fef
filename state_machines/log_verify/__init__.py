"""Verify a KRaft cluster's metadata log against the project's KRaft rules (issue 45 §2).

Pure: the records come in decoded (`LogEntry`), the verdicts go out as values. The shell
(`shadow_controller/metadata_log_verify.py`) reads the files with `streaming.metadata_log`.

* `entries.py`: a decoded record as the verifier takes it, and its fields as the rules'
  record values (records.py of the KRaft rules);
* `log_state.py`: the state the log replays to, as Kafka's `*ControlManager.replay` keeps
  it, with the indexes the handlers iterate (`BrokersToIsrs`, `BrokersToElrs`);
* `predict.py`: what the rules write for each kind of controller event;
* `severity.py`: how bad a difference between the log and the prediction is;
* `verifier.py`: grouping the records into controller events (the theory), and the driver;
  its parts: `topics.py` (creations, configs), `broker_events.py` (the runs around a broker
  record), `requests.py` (records no anchor claims), on `base.py`; `verdicts.py` holds the
  answers.

The package imports none of its modules (a module's relative import runs this file): use
`state_machines.log_verify.verifier` (Verifier, verify_entries) and `.entries` (LogEntry).
"""
