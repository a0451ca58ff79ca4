"""kiln's version: one place, read by kiln/__init__.py, pyproject.toml and the exporters."""
__version__ = "0.1.0"
