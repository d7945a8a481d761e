"""Hook implementations of mas-library-eval (entry point ``eval``)."""
