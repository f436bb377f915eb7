//! A node's handle on the shared database ([`PgEvents`]), and what every query needs of it.
//! The files beside this one each add the queries of one table (`impl PgEvents`), and their
//! parent re-exports their types: with the struct in the parent, all of them formed one import
//! circle with it (issue 32). Its fields are visible to the parent and those files
//! (`pub(super)`), as they were with the struct in the parent.

use std::sync::Arc;

use sqlx::postgres::PgPool;

use super::ephemeral::{self, Outbox};
use super::writer::Writer;

/// A node's handle on the shared database. Cheap to clone.
#[derive(Clone, Debug)]
pub struct PgEvents {
    pub(super) pool: PgPool,
    pub(super) writer: Writer,
    pub(super) node_id: Arc<str>,
    pub(super) outbox: Arc<Outbox>,
}

impl PgEvents {
    /// `url` is the one the pool connected with: the writer opens its own connection to it,
    /// and waits for one no longer than the pool does.
    pub fn new(pool: PgPool, url: &str, node_id: &str) -> Self {
        let timeout = pool.options().get_acquire_timeout();
        Self {
            pool,
            writer: Writer::start(url.to_string(), timeout),
            node_id: node_id.into(),
            outbox: Default::default(),
        }
    }

    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Queues one ephemeral event of a session run here for the other nodes.
    pub fn publish_ephemeral(&self, session_id: &str, position: i64, json: &str) {
        ephemeral::publish(&self.outbox, &self.writer, session_id, position, json);
    }
}
