-- Nodes share no disk: a session's own files besides its log (plan.md, checkpoints/,
-- files/, ...) are mirrored here by the node running it, and written out by a node that
-- follows or takes it over. A removed file stays as a row without content, so a node that
-- holds an older copy removes it too. `version` orders changes across all sessions.
CREATE SEQUENCE IF NOT EXISTS session_files_version;

CREATE TABLE IF NOT EXISTS session_files (
    session_id TEXT   NOT NULL,
    path       TEXT   NOT NULL,
    content    BYTEA,
    version    BIGINT NOT NULL DEFAULT nextval('session_files_version'),
    PRIMARY KEY (session_id, path)
);

CREATE INDEX IF NOT EXISTS session_files_by_version ON session_files (session_id, version);

-- Sessions created and deleted, for the clients of every node (`session.lifecycle`): each node
-- reads the rows other nodes wrote since it started. `tenant` is the owner's at the time, so a
-- node tells only that tenant's clients.
CREATE TABLE IF NOT EXISTS session_lifecycle (
    seq        BIGSERIAL   PRIMARY KEY,
    node_id    TEXT        NOT NULL,
    tenant     TEXT,
    json       TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
