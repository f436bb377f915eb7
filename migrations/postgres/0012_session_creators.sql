-- Which user of its tenant created each session (as migrations/sqlite/0003).
ALTER TABLE session_owners ADD COLUMN IF NOT EXISTS creator TEXT;
