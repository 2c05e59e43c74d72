"""A configuration turned into live objects: providers, routes, health, state; the lookups
the rooms above hand it."""
