"""Configuration: load, validate (one validator, for the file and the planned admin API) ->
frozen objects. The file's keys are described in `docs/configuration.md`."""

from __future__ import annotations
