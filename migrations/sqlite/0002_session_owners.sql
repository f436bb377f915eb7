-- Which tenant of a shared server (`skipper serve`) owns each session. A table of its own
-- rather than a column of `sessions`: `sessions` is a cache rebuilt from the logs, while
-- ownership is not (yet) in the logs and must survive a rebuild; and a row is written before
-- the session exists, so its `session.created` notification already knows its owner.
-- Sessions created by a single-user server (stdio, --port) have no row and no tenant sees them.
CREATE TABLE IF NOT EXISTS session_owners (
    session_id TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS session_owners_tenant ON session_owners (tenant);
