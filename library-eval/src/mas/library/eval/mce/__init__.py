"""The MCE jury: judge-model resolution, panel voting, scoring runs."""
