"""Rendering lab results: the terminal table, SVG plots and report.html."""
