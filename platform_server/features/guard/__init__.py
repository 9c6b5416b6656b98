"""The tool guard: rules, grants and pending approvals every tool call passes, and the call log."""
