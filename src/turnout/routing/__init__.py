"""The routing engine (SPEC §3). No I/O imports here: no HTTP clients, databases or caches."""

from __future__ import annotations
