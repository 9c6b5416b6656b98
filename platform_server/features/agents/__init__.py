"""Agents: their settings, prompt files and private workspace folders, archives (import/export) and
generating an agent from a requirement."""
