"""Lab steps that score runs with the eval library."""
