"""Settings and feature flags: the workspace's preferences, the global flags and their routes."""
