"""ACP endpoints: coding agents spoken to over the Agent Client Protocol (JSON-RPC 2.0 on stdio)."""
