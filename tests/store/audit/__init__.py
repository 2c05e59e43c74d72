"""The request audit and the usage ledger: writer, queries, and the gateway end to end."""
