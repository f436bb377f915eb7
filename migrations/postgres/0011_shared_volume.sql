-- The id of the volume every node mounts at its `[cluster] shared_root`: the first node to
-- start writes a fresh id into the volume (`.skipper-volume`) and records it here; a node whose
-- root holds no id, or another one, is not on the cluster's volume and refuses to start.
-- One row at most (`only_row` is always true).
CREATE TABLE IF NOT EXISTS cluster_volume (
    only_row  BOOLEAN     PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    volume_id TEXT        NOT NULL,
    node_id   TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
