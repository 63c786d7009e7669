"""Follow-up tickets from the failed and blocked clusters of a campaign's cell runs."""
