"""Health of the process, version and what this host can run (a headless browser, local models)."""
