"""MCP servers: global, admin-managed connections whose discovered tools join the tool registry."""
