"""Tests of the provider adapters (a package, so its conftest has a unique module name)."""
