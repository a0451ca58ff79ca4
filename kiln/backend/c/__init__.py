"""The C backend: generated native code for optimized graphs."""
