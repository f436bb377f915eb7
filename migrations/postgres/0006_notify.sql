-- Followers and lifecycle readers are woken by NOTIFY on channel `skipper_cluster` instead of
-- waiting for their next poll: `e:<session>` for a new event, `f:<session>` for a changed
-- file, `l` for a lifecycle row. Identical notifications of one transaction arrive once.
CREATE OR REPLACE FUNCTION skipper_notify_session() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('skipper_cluster', TG_ARGV[0] || ':' || NEW.session_id);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION skipper_notify_lifecycle() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('skipper_cluster', 'l');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS session_events_notify ON session_events;
CREATE TRIGGER session_events_notify AFTER INSERT ON session_events
    FOR EACH ROW EXECUTE FUNCTION skipper_notify_session('e');

DROP TRIGGER IF EXISTS session_files_notify ON session_files;
CREATE TRIGGER session_files_notify AFTER INSERT OR UPDATE ON session_files
    FOR EACH ROW EXECUTE FUNCTION skipper_notify_session('f');

DROP TRIGGER IF EXISTS session_lifecycle_notify ON session_lifecycle;
CREATE TRIGGER session_lifecycle_notify AFTER INSERT ON session_lifecycle
    FOR EACH STATEMENT EXECUTE FUNCTION skipper_notify_lifecycle();
