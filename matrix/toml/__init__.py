"""The matrix as a TOML file: reading it (defaults, grids, sources, errors naming the field),
its JSON Schema and field reference for editors, and the starting matrix `faceoff init` writes."""
