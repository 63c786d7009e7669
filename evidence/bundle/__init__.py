"""Writing the bundle in place, and the JSON Schemas it ships."""
