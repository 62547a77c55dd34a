"""Attacks, each given only what its threat model grants (see each module's docstring)."""
