"""The files a campaign writes into its folder: one module per file, with its model and name."""
