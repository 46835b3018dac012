"""The ground layer: what every layer above uses and nothing of the mock's own."""
