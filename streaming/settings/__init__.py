"""The job's settings, in one place: `schema` (the `JobSettings` of a run, the one list of
settings, the TOML file and `--set`), `kinds` (how each value is checked) and `checkpoint`
(what a checkpoint records of them, and the settings it freezes)."""
