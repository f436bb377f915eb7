-- Requests forwarded to the node running a session (a `session.send` or `session.abort` made
-- on a node that only follows it). The forwarding node inserts a row and waits; the owner
-- claims it, runs it as a local request and writes the answer back; the forwarding node reads
-- the answer and deletes the row. Rows nobody answered are pruned after a while.
CREATE TABLE IF NOT EXISTS session_inbox (
    id          BIGSERIAL PRIMARY KEY,
    session_id  TEXT NOT NULL,
    method      TEXT NOT NULL,
    params      TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    claimed_by  TEXT,
    answered    BOOLEAN NOT NULL DEFAULT FALSE,
    result      TEXT,
    error       TEXT
);
CREATE INDEX IF NOT EXISTS session_inbox_session ON session_inbox (session_id) WHERE NOT answered;

-- `i:<session>` wakes the owner for a new request, `a:<row>` the forwarding node for its answer.
CREATE OR REPLACE FUNCTION skipper_notify_inbox() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM pg_notify('skipper_cluster', 'i:' || NEW.session_id);
    ELSIF NEW.answered AND NOT OLD.answered THEN
        PERFORM pg_notify('skipper_cluster', 'a:' || NEW.id);
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS session_inbox_notify ON session_inbox;
CREATE TRIGGER session_inbox_notify AFTER INSERT OR UPDATE ON session_inbox
    FOR EACH ROW EXECUTE FUNCTION skipper_notify_inbox();
