"""The audit log: every create, update and delete of a resource is one event written in the same
transaction (`audit.save` / `audit.record`), and the routes that read it."""
