"""What the gateway tells an operator: log lines and Prometheus metrics (`docs/gateway-api.md`,
Logs and metrics), fed from each finished request and each health transition."""
