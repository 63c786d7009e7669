"""The files a campaign writes into its folder and bundle: one module per file, its model, name and format history."""
