"""Workspaces: creating them, their members' roles and the per-workspace settings (host tools)."""
