"""privnlu's version (one place; ``privnlu.__version__`` and every record's ``"privnlu"`` field read it)."""

__version__ = "0.10.0"
