"""Agent templates: the seeded presets and creating an agent from one."""
