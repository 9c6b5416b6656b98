"""Self-hosted agent platform server."""

__version__ = "0.1.0"
