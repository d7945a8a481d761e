"""Metric plugins: stock MCE judge ids, inline prompt metrics, computed metrics."""
