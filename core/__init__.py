"""Rolecall's core: the conversation model and its rules, and the storage around them.

The modules directly in this package (participants, membership, timeline, visibility,
memory_policy, errors) are pure: plain values and functions, no I/O, no clock.
`core.storage` does the I/O around them; `core.storage.bus` nudges listeners after commits.
"""
