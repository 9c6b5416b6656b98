"""First-run setup: the setup token, the first admin and workspace, and the headless admin."""
