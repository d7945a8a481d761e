"""Hook implementations of mas-library-lab (entry point ``lab``)."""
