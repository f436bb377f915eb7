-- Which tenant of a shared server owns each session (as migrations/sqlite/0002).
CREATE TABLE IF NOT EXISTS session_owners (
    session_id TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS session_owners_tenant ON session_owners (tenant);
