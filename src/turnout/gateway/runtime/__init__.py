"""A configuration turned into live objects: providers, routes, resolution."""
