"""The mock's version: one place for the package, the command line and the admin API."""

__version__ = "0.1.0"
