-- Session index behind session.list / getLastId / getMetadata. Rebuildable from the
-- events.jsonl logs, so it holds nothing that is not derivable from disk.
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
    has_user_message INTEGER NOT NULL DEFAULT 0
);

-- list and getLastId order by recency.
CREATE INDEX IF NOT EXISTS sessions_updated_at ON sessions (updated_at);
