"""The campaign walk as plain functions: no Prefect, no command line."""
