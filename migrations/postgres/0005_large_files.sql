-- Files too large for one row (over 16 MiB), and snapshots of a session's `session.db` of that
-- size, are stored in pieces: `session_files.chunks` counts them (0: the content is inline, or
-- the file was removed when `content` is NULL too), and the pieces are rows here, numbered from 0.
-- A file's pieces are replaced in the same transaction as its `session_files` row.
ALTER TABLE session_files ADD COLUMN IF NOT EXISTS chunks INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS session_file_chunks (
    session_id TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    data       BYTEA   NOT NULL,
    PRIMARY KEY (session_id, path, n)
);
