-- Nodes now share a volume (`[cluster] shared_root`) for workspaces and session directories:
-- the file mirror of 0004, 0005, 0008 and 0009 goes. Dropping a table drops its triggers;
-- `session_lifecycle` (0004) and `skipper_notify_session` (0006, still used by
-- `session_events`) stay.
DROP TABLE IF EXISTS session_file_chunks;
DROP TABLE IF EXISTS session_files;
DROP SEQUENCE IF EXISTS session_files_version;
DROP TABLE IF EXISTS workspace_file_chunks;
DROP TABLE IF EXISTS workspace_files;
DROP SEQUENCE IF EXISTS workspace_files_version;
DROP FUNCTION IF EXISTS skipper_notify_workspace();
DROP TABLE IF EXISTS workspace_roots;
