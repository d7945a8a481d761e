"""Hook implementations of mas-library-standard (entry point ``standard``)."""
