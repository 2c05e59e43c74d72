"""What the gateway sends back: routing headers and errors, streamed answers, and the
wire formats a caller may speak."""
