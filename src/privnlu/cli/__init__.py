"""The ``privnlu`` command line."""
