"""Terminal views of a bundle for the command line."""
