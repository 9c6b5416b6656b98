"""Tools: the Tool table, the runtime registry, the built-in system tools and the /api/v1/tools routes."""
