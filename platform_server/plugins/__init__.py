"""Plugins shipped with the server. Third-party plugins are packages that declare an entry point in
the `platform_server.plugins` group pointing at an object with the `Plugin` shape
(see features/plugins/service.py)."""
