"""`turnout import litellm FILE`: the entry points the command line calls.

The conversion lives in `turnout.config.litellm`; this module names its public surface.
"""

from __future__ import annotations

from turnout.config.litellm import ImportResult, convert_litellm, main_import_litellm

__all__ = ["ImportResult", "convert_litellm", "main_import_litellm"]
