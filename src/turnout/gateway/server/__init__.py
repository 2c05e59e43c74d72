"""Serving HTTP: the ASGI application, one request in flight, and the server processes."""
