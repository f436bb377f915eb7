-- The session index (as migrations/sqlite/0001): session.list / getLastId / getMetadata.
CREATE TABLE IF NOT EXISTS sessions (
    id               TEXT PRIMARY KEY,
    cwd              TEXT NOT NULL,
    git_root         TEXT,
    repository       TEXT,
    branch           TEXT,
    model            TEXT,
    title            TEXT,
    summary          TEXT,
    client_name      TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    has_user_message BOOLEAN NOT NULL DEFAULT FALSE,
    -- Insertion order, the tie-breaker SQLite's rowid gives (list and getLastId).
    seq              BIGSERIAL NOT NULL
);

CREATE INDEX IF NOT EXISTS sessions_updated_at ON sessions (updated_at);
