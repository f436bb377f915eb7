//! Wake-ups from the database: the triggers of migration `postgres/0006_notify.sql` NOTIFY
//! channel `skipper_cluster` when a session's events change or a lifecycle row is written
//! (`postgres/0007_inbox.sql`: when a request is forwarded or answered).
//! A node LISTENs on its own connection; notifications lost while it reconnects are
//! caught by the polling it keeps as a fallback. The same connection hears the ephemeral
//! events of sessions other nodes run (channel `skipper_ephemeral`, see `ephemeral.rs`).

use sqlx::postgres::PgListener;

use super::ephemeral::{self, Assembler, EphemeralBatch};
use super::handle::PgEvents;
use crate::error::StoreError;

const CHANNEL: &str = "skipper_cluster";

/// What changed, as a notification tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wakeup {
    /// A session's log changed.
    Session(String),
    /// A session was created or deleted somewhere, or changed (`session.lifecycle`).
    Lifecycle,
    /// Ephemeral events of a session another node runs.
    Ephemeral(EphemeralBatch),
    /// A request forwarded to the node running a session waits in its inbox.
    Inbox(String),
    /// A forwarded request (by inbox row) was answered.
    Answered(i64),
}

impl Wakeup {
    fn parse(payload: &str) -> Option<Self> {
        match payload.split_once(':') {
            Some(("e", id)) if !id.is_empty() => Some(Wakeup::Session(id.to_string())),
            Some(("i", id)) if !id.is_empty() => Some(Wakeup::Inbox(id.to_string())),
            Some(("a", row)) => row.parse().ok().map(Wakeup::Answered),
            _ if payload == "l" => Some(Wakeup::Lifecycle),
            _ => None,
        }
    }
}

/// A node's LISTEN connection, read by a task of its own (so waiting for the next wake-up can
/// be given up at any point without losing part of a message). Wake-ups a slow reader has not
/// taken are dropped past a bound: the polling catches up.
pub struct Wakeups {
    rx: tokio::sync::mpsc::Receiver<Result<Wakeup, StoreError>>,
}

impl Wakeups {
    /// The next wake-up. `Err` when the connection is lost and cannot be made again; the
    /// listener reconnects by itself otherwise (what was sent meanwhile is lost).
    pub async fn next(&mut self) -> Result<Wakeup, StoreError> {
        self.rx.recv().await.unwrap_or(Err(StoreError::Unsupported("the cluster listener stopped")))
    }
}

impl PgEvents {
    /// Starts listening for wake-ups.
    pub async fn listen(&self) -> Result<Wakeups, StoreError> {
        let mut listener = PgListener::connect_with(self.pool()).await?;
        listener.listen_all([CHANNEL, ephemeral::CHANNEL]).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        tokio::spawn(async move {
            let mut pieces = Assembler::default();
            loop {
                let woken = match listener.recv().await {
                    Ok(n) if n.channel() == ephemeral::CHANNEL => match pieces.feed(n.payload()) {
                        Some(batch) => Ok(Wakeup::Ephemeral(batch)),
                        None => continue,
                    },
                    Ok(n) => match Wakeup::parse(n.payload()) {
                        Some(w) => Ok(w),
                        None => continue,
                    },
                    Err(e) => Err(StoreError::from(e)),
                };
                let failed = woken.is_err();
                match tx.try_send(woken) {
                    Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => return,
                    _ if failed => return,
                    _ => {}
                }
            }
        });
        Ok(Wakeups { rx })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_name_what_changed() {
        assert_eq!(Wakeup::parse("e:abc"), Some(Wakeup::Session("abc".into())));
        assert_eq!(Wakeup::parse("e:a:b"), Some(Wakeup::Session("a:b".into())));
        assert_eq!(Wakeup::parse("l"), Some(Wakeup::Lifecycle));
        // The file mirror's notifications (dropped in 0010) are not wake-ups any more.
        assert_eq!(Wakeup::parse("w:acme"), None);
        assert_eq!(Wakeup::parse("f:abc"), None);
        assert_eq!(Wakeup::parse("e:"), None);
        assert_eq!(Wakeup::parse("x:abc"), None);
        assert_eq!(Wakeup::parse("i:abc"), Some(Wakeup::Inbox("abc".into())));
        assert_eq!(Wakeup::parse("a:42"), Some(Wakeup::Answered(42)));
    }
}
