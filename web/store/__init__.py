"""The database: tables and the queries that must be atomic (db), schema upgrades of an existing
database (migrate), and the gradebook's read-only queries (gradebook)."""
