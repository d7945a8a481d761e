"""Manifest models, loading, binding and model-reference resolution."""
