"""The operator's dashboard at `/ui` (see `turnout.gateway.ui.app`)."""
