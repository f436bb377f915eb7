//! Runs database work for synchronous callers: a thread with its own single-threaded runtime
//! and connection pool, fed jobs through a channel. The emitter appends under a plain mutex,
//! from whatever thread or runtime it is on; it cannot `.await`, and a runtime cannot block on
//! itself, so the insert happens here while the caller waits for the answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;

use sqlx::postgres::{PgPool, PgPoolOptions};

use crate::error::StoreError;

type Job = Box<dyn FnOnce(PgPool) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

#[derive(Clone, Debug)]
pub(crate) struct Writer {
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
}

impl Writer {
    pub(crate) fn start(url: String, timeout: std::time::Duration) -> Self {
        let (jobs, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
        let spawned = std::thread::Builder::new().name("skipper-pg-writer".into()).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "database writer runtime failed to start");
                    return;
                }
            };
            runtime.block_on(async move {
                // Lazy: the first append connects, and a lost connection is replaced by the pool.
                let pool = match PgPoolOptions::new().max_connections(2).acquire_timeout(timeout).connect_lazy(&url) {
                    Ok(pool) => pool,
                    Err(e) => {
                        tracing::error!(error = %e, "database writer cannot use the database URL");
                        return;
                    }
                };
                while let Some(job) = rx.recv().await {
                    job(pool.clone()).await;
                }
            });
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "database writer thread failed to start");
        }
        Self { jobs }
    }

    /// Runs `work` on the writer's runtime after the jobs already given, without waiting: what
    /// it sends reaches the database before any later job's.
    pub(crate) fn submit<F, Fut>(&self, work: F)
    where
        F: FnOnce(PgPool) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let job: Job = Box::new(move |pool| Box::pin(work(pool)));
        let _ = self.jobs.send(job);
    }

    /// Runs `work` on the writer's runtime and waits for its result. On a multi-threaded tokio
    /// worker the wait is announced (`block_in_place`) so the worker's other tasks move on.
    pub(crate) fn run<T, F, Fut>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(PgPool) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |pool| {
            Box::pin(async move {
                let _ = tx.send(work(pool).await);
            })
        });
        let gone = || StoreError::Unsupported("the database writer stopped");
        self.jobs.send(job).map_err(|_| gone())?;
        let wait = || rx.recv().map_err(|_| gone());
        let multi = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if multi {
            tokio::task::block_in_place(wait)?
        } else {
            wait()?
        }
    }
}
