"""On-disk models of the campaign folder, one module per file it holds."""
