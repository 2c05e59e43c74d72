"""How a request finds its route and its per-request plan: resolution, request plans
(credentials and policies), session pins and the cache."""
