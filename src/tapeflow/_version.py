"""The version of tapeflow: defined here only (pyproject.toml reads it)."""
__version__ = '0.1.0'
