"""report.html and history.html with their figures: the only matplotlib users."""
