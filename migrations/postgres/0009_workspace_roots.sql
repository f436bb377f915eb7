-- Where each node keeps each tenant's workspace. Nodes share no disk and need not agree on
-- paths: a session another node ran has that node's working directory, which a node taking it
-- over finds here and moves to the same place under its own copy of the workspace.
CREATE TABLE IF NOT EXISTS workspace_roots (
    tenant TEXT NOT NULL,
    node   TEXT NOT NULL,
    root   TEXT NOT NULL,
    PRIMARY KEY (tenant, node)
);
