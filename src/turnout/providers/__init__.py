"""Provider adapters: one module per provider kind (SPEC §4)."""

from __future__ import annotations
