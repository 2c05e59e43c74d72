"""Pure access decisions shared by the validator and the gateway.

Model patterns and their index, which routes a configuration serves, access bindings and
grants, caller keys, and routing policies. Nothing here does I/O or knows HTTP; the config
validator and the gateway both stand on this floor.
"""
