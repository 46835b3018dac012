"""Tools that keep the repository's generated documents in step with their sources."""
