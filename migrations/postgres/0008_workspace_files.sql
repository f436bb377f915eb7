-- Nodes share no disk: a tenant's workspace (where its sessions' working directories are, and
-- the code their tools write) is mirrored here by the nodes running its sessions, and written
-- out by every other node. Same layout as `session_files` (0004, 0005): content inline, or in
-- `workspace_file_chunks` pieces when over 16 MiB, or neither once removed. `size` is the
-- file's length when pushed (NULL once removed). Content hashes and modification times stay
-- on each node: another node's clock and hash tell this one nothing.
CREATE SEQUENCE IF NOT EXISTS workspace_files_version;

CREATE TABLE IF NOT EXISTS workspace_files (
    tenant  TEXT    NOT NULL,
    path    TEXT    NOT NULL,
    content BYTEA,
    chunks  INTEGER NOT NULL DEFAULT 0,
    size    BIGINT,
    version BIGINT  NOT NULL DEFAULT nextval('workspace_files_version'),
    PRIMARY KEY (tenant, path)
);

CREATE INDEX IF NOT EXISTS workspace_files_by_version ON workspace_files (tenant, version);

CREATE TABLE IF NOT EXISTS workspace_file_chunks (
    tenant TEXT    NOT NULL,
    path   TEXT    NOT NULL,
    n      INTEGER NOT NULL,
    data   BYTEA   NOT NULL,
    PRIMARY KEY (tenant, path, n)
);

-- The session table gets the same `size` column, so one code path writes both.
ALTER TABLE session_files ADD COLUMN IF NOT EXISTS size BIGINT;

-- `w:<tenant>` on channel `skipper_cluster` when a workspace file changes (see 0006).
CREATE OR REPLACE FUNCTION skipper_notify_workspace() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('skipper_cluster', 'w:' || NEW.tenant);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS workspace_files_notify ON workspace_files;
CREATE TRIGGER workspace_files_notify AFTER INSERT OR UPDATE ON workspace_files
    FOR EACH ROW EXECUTE FUNCTION skipper_notify_workspace();
