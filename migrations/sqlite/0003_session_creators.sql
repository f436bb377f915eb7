-- Which user of its tenant created each session (`[[tenants.users]]` of a shared server):
-- its model calls carry that user's credentials when they are resumed later. NULL: created
-- with the tenant's own token, or before tenants had users.
ALTER TABLE session_owners ADD COLUMN creator TEXT;
