"""The admin API under `/admin/v1`: projects and their providers, routes, consumers, keys,
bindings and policies over the store, the audit of changes, health, upstreams and a routing
test, with its OpenAPI document (`docs/admin-api.md`).

The gateway imports this package only when a request for `/admin/...` arrives, so a gateway
that is never asked pays nothing for it at start-up. `context.AdminContext` is what serving
hands it: the store, the admin keys, the config file, the live runtimes and the reload.
"""
