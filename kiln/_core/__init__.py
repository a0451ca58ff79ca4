"""kiln._core."""
