"""`python -m turnout.mock_upstream --port N`: run the mock upstream."""

from __future__ import annotations

import sys

from turnout.mock_upstream.server import main

sys.exit(main())
