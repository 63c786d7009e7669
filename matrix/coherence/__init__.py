"""Fields of the matrix that must say the same thing, read together (docs/matrix.md,
"Checks and limits")."""
