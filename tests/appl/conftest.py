"""appl's tests use the `scripted` fixture from appl's own pytest plugin
(appl/testing/pytest_plugin.py, registered as an entry point), the same one users get."""
