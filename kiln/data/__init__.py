"""Small data sets that ship inside installed packages (never downloaded)."""
