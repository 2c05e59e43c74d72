"""Command-line entry points of the gateway: `turnout check`, `turnout routes`, `turnout serve`."""
