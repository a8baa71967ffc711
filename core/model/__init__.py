"""The model: Rolecall's concepts and their rules, pure.

Plain values and functions over them — no I/O, no `await`, no database session, no wall clock
(time is passed in). Everything else in `core` (storage, the engine) does the I/O around them.

- the thread model: `participants` (addresses, participant sets), `threads`, `membership` (the
  participant state machine), `timeline` (events), `visibility` (the read-time filter),
  `serialize` (events and threads as JSON, the one wire format every edge speaks);
- memory: `memory` (entries and the recall filter), `memory_policy`;
- people and their identities: `people`; tasks: `tasks`;
- delivery rules: `endpoints` (outbound webhook endpoints), `webhooks` (inbound sources);
- `roles/` (a role and its manifest), `runs/` (runs, what a driver decides: when a run is
  prompted, what it is told, what becomes of the end of a turn);
- `values` (the one rule of acceptable strings and numbers), `errors` (the domain errors).

A test (`tests/unit/test_layers.py`) keeps this package free of storage, the engine, the
channels, the gateway and I/O libraries.
"""
