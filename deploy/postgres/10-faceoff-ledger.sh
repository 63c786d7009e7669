#!/bin/sh
# First start of the PostgreSQL container only: the faceoff ledger's role and database.
# faceoff creates its tables itself on first use (ledger/db.py).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v password="$FACEOFF_DB_PASSWORD" <<'SQL'
CREATE ROLE faceoff LOGIN PASSWORD :'password';
CREATE DATABASE faceoff OWNER faceoff;
SQL
