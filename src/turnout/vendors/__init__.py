"""What turnout knows of each vendor, and how a failed call is classified.

The catalog holds one entry per vendor (quota signals, credit-429 flags, reset-time parsers,
embeddings support, base URLs of presets); `classify` turns an HTTP status, a vendor error body or
an exception into one of the error classes; `redact` scrubs secrets from an upstream's error
text. Providers and the engine both read this floor.
"""
