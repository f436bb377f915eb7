-- What each user of a shared server's tenants used, per UTC day (as migrations/sqlite/0004).
CREATE TABLE IF NOT EXISTS tenant_usage (
    tenant TEXT NOT NULL,
    user_name TEXT NOT NULL,
    day TEXT NOT NULL,
    model_calls BIGINT NOT NULL DEFAULT 0,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    premium_requests DOUBLE PRECISION NOT NULL DEFAULT 0,
    tool_calls BIGINT NOT NULL DEFAULT 0,
    sandbox_denials BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, user_name, day)
);

-- Model requests each tenant's nodes took per UTC minute (`minute`: `YYYY-MM-DDTHH:MM`),
-- counted by the statement that takes them, so that a per-minute limit holds across nodes;
-- `last_grant`: how many the last such statement took (what it returns).
CREATE TABLE IF NOT EXISTS tenant_requests (
    tenant TEXT NOT NULL,
    minute TEXT NOT NULL,
    count BIGINT NOT NULL,
    last_grant BIGINT NOT NULL,
    PRIMARY KEY (tenant, minute)
);
