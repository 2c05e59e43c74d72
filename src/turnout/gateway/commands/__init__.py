"""Command-line entry points of the gateway: `turnout check`, `routes`, `serve`, `health`,
`keys`, and `import … --into-store`."""
