"""The nights of a shared ledger together: their series, drift and cache."""
