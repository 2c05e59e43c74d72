"""How a request finds its route and its per-request plan: resolution, the route each
served route entry holds, request plans (credentials and policies), session pins and the cache."""
