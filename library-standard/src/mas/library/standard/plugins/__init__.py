"""Strategy plugins of mas-library-standard, registered from :mod:`mas.library.standard.plugin`."""
