"""Configuration: load, validate (one validator for file and API) -> frozen objects (SPEC §7)."""

from __future__ import annotations
