-- Several nodes on one database share no disk: a session's event log, its workspace.yaml
-- metadata and the lease saying which node runs it all live here.

-- The event log: one row per persisted event, `seq` counting from 1 per session. The primary
-- key orders a session's events and refuses a second writer's event at a taken position; the
-- unique id refuses a duplicate event.
CREATE TABLE IF NOT EXISTS session_events (
    session_id TEXT   NOT NULL,
    seq        BIGINT NOT NULL,
    id         TEXT   NOT NULL,
    json       TEXT   NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, id)
);

-- workspace.yaml, as its text.
CREATE TABLE IF NOT EXISTS session_meta (
    session_id TEXT PRIMARY KEY,
    yaml       TEXT NOT NULL
);

-- The node running each session, until `expires_at` (database time) unless renewed.
CREATE TABLE IF NOT EXISTS session_leases (
    session_id TEXT PRIMARY KEY,
    node_id    TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
