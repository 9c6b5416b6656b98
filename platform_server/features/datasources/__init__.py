"""Data sources: read-only SQL databases agents query through the `datasource_query` tool."""
