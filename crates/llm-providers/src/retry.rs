//! When and how long to retry a failed model call, and the loop that does it.
//!
//! Transient failures (rate limits, 5xx gateways, dropped connections) are retried inside the
//! client so the loop sees one call; each retry is announced as [`ModelEvent::Retry`] so the
//! session can show `model.call_failure` / `assistant.turn_retry`.

use std::future::Future;
use std::time::{Duration, SystemTime};

use rand::Rng;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::types::{ModelEvent, ProviderError, RetryReason};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (1 = never retry).
    pub max_attempts: u32,
    /// Delay before the first retry when the server gives no `retry-after`; doubles per retry.
    pub base_delay: Duration,
    /// Upper bound of the exponential backoff.
    pub max_delay: Duration,
    /// Upper bound for a server-requested `retry-after`, so a hostile or buggy header can't
    /// park a session for hours.
    pub max_retry_after: Duration,
    /// How many times a 401 is retried (a rotating credential may have just expired). The
    /// Copilot API never recovers from one; BYOK providers are given two more tries.
    pub auth_retries: u32,
}

/// The Copilot API's: a 429 or a 5xx is sent six times in all, as the original CLI does
/// (1.0.102 against a fake that always fails: six requests, five `assistant.turn_retry`).
impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            auth_retries: 0,
        }
    }
}

impl RetryPolicy {
    /// What a bring-your-own-key provider gets, as the original CLI does: a 5xx retried five
    /// times, a 401 twice.
    pub fn byok() -> Self {
        Self { auth_retries: 2, ..Self::default() }
    }

    /// Backoff before retry number `retry` (0 = first retry), with jitter in [delay/2, delay]
    /// so many sessions hitting the same rate limit don't retry in lockstep.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        let delay = self.base_delay.saturating_mul(factor).min(self.max_delay);
        let millis = delay.as_millis() as u64;
        if millis < 2 {
            return delay;
        }
        Duration::from_millis(rand::thread_rng().gen_range(millis / 2..=millis))
    }
}

/// A failed attempt, with what the retry decision needs beyond the error itself.
#[derive(Debug)]
pub struct AttemptError {
    pub error: ProviderError,
    /// Server-requested delay (`retry-after`), already parsed.
    pub retry_after: Option<Duration>,
    /// Whether this attempt already streamed text/reasoning/tool-call deltas to the caller. A
    /// retry would show them twice, so a truncated stream that got that far is final.
    pub emitted_output: bool,
}

impl From<ProviderError> for AttemptError {
    fn from(error: ProviderError) -> Self {
        Self { error, retry_after: None, emitted_output: false }
    }
}

/// Why `err` is worth retrying, or `None` if it is final.
pub fn retry_reason(err: &ProviderError, emitted_output: bool) -> Option<RetryReason> {
    match err {
        ProviderError::Http { status: 429, .. } => Some(RetryReason::RateLimit),
        ProviderError::Http { status: 401, .. } => Some(RetryReason::Auth),
        // 529: Anthropic's "overloaded", as transient as a 503.
        ProviderError::Http { status: 500 | 502 | 503 | 504 | 529, .. } => Some(RetryReason::ServerError),
        ProviderError::Network(_) => Some(RetryReason::Network),
        ProviderError::Truncated(_) if !emitted_output => Some(RetryReason::Network),
        _ => None,
    }
}

/// Parse a `retry-after` value: delta-seconds or an HTTP date (relative to `now`).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    // Some servers send fractional seconds; accept them rather than falling back to backoff.
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = SystemTime::from(date);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Run `attempt` until it succeeds, fails for good, or the attempts run out; returns the last
/// error in the latter cases. `attempt` gets the 0-based attempt number. Cancellation aborts
/// both an attempt in flight (its future is dropped, which closes the connection) and a
/// backoff sleep.
pub async fn run<T, F, Fut>(
    policy: &RetryPolicy,
    events: Option<&UnboundedSender<ModelEvent>>,
    cancel: &CancellationToken,
    mut attempt: F,
) -> Result<T, ProviderError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, AttemptError>>,
{
    let max_attempts = policy.max_attempts.max(1);
    let mut n = 0u32;
    let mut auth_failures = 0u32;
    loop {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let result = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
            result = attempt(n) => result,
        };
        let failure = match result {
            Ok(value) => return Ok(value),
            Err(failure) => failure,
        };
        let Some(reason) = retry_reason(&failure.error, failure.emitted_output) else {
            return Err(failure.error);
        };
        if reason == RetryReason::Auth {
            auth_failures += 1;
            if auth_failures > policy.auth_retries {
                return Err(failure.error);
            }
        }
        if n + 1 >= max_attempts {
            tracing::warn!(attempts = n + 1, error = %failure.error, "model call failed; no attempts left");
            return Err(failure.error);
        }
        let delay = match failure.retry_after {
            Some(d) => d.min(policy.max_retry_after),
            None => policy.backoff(n),
        };
        tracing::info!(attempt = n, delay_ms = delay.as_millis() as u64, error = %failure.error, "retrying model call");
        if let Some(events) = events {
            // The receiver going away doesn't stop the call; the caller still gets the result.
            let _ = events.send(ModelEvent::Retry {
                attempt: n,
                status: failure.error.status_code(),
                reason,
                delay_ms: delay.as_millis() as u64,
                message: failure.error.to_string(),
            });
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
            _ = tokio::time::sleep(delay) => {}
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn http(status: u16) -> ProviderError {
        ProviderError::http(status, format!("status {status}"))
    }

    fn tiny() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
            max_retry_after: Duration::from_millis(5),
            auth_retries: 0,
        }
    }

    #[test]
    fn classification() {
        assert_eq!(retry_reason(&http(429), false), Some(RetryReason::RateLimit));
        for s in [500, 502, 503, 504, 529] {
            assert_eq!(retry_reason(&http(s), true), Some(RetryReason::ServerError));
        }
        assert_eq!(retry_reason(&http(401), false), Some(RetryReason::Auth));
        for s in [400, 403, 404, 413, 422, 501] {
            assert_eq!(retry_reason(&http(s), false), None, "{s}");
        }
        assert_eq!(retry_reason(&ProviderError::Network("x".into()), false), Some(RetryReason::Network));
        assert_eq!(retry_reason(&ProviderError::Truncated("x".into()), false), Some(RetryReason::Network));
        assert_eq!(retry_reason(&ProviderError::Truncated("x".into()), true), None);
        assert_eq!(retry_reason(&ProviderError::Cancelled, false), None);
        assert_eq!(retry_reason(&ProviderError::Protocol("x".into()), false), None);
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470); // 2015-10-21 07:27:50 GMT
        assert_eq!(parse_retry_after("0", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("1.5", now), Some(Duration::from_millis(1500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), Some(Duration::from_secs(10)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn backoff_grows_and_caps() {
        let p = RetryPolicy::default();
        let b0 = p.backoff(0);
        assert!(b0 >= Duration::from_millis(250) && b0 <= Duration::from_millis(500), "{b0:?}");
        let b2 = p.backoff(2);
        assert!(b2 >= Duration::from_millis(1000) && b2 <= Duration::from_millis(2000), "{b2:?}");
        for r in [4, 10, 40, 100] {
            let b = p.backoff(r);
            assert!(b >= Duration::from_secs(4) && b <= Duration::from_secs(8), "{r}: {b:?}");
        }
    }

    #[tokio::test]
    async fn retries_then_succeeds_and_reports() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let calls = AtomicU32::new(0);
        let out = run(&tiny(), Some(&tx), &CancellationToken::new(), |n| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    Err(AttemptError {
                        error: http(429),
                        retry_after: Some(Duration::from_secs(100)),
                        emitted_output: false,
                    })
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(out.ok(), Some(1));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        match rx.try_recv() {
            Ok(ModelEvent::Retry {
                attempt: 0,
                status: Some(429),
                reason: RetryReason::RateLimit,
                delay_ms: 5,
                ..
            }) => {}
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn gives_up_after_max_attempts_with_last_error() {
        let calls = AtomicU32::new(0);
        let out: Result<(), _> = run(&tiny(), None, &CancellationToken::new(), |n| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { Err(http(500 + n as u16 * 2).into()) }
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(out.err().and_then(|e| e.status_code()), Some(504));
    }

    #[tokio::test]
    async fn auth_failures_get_their_own_budget() {
        for (auth_retries, expected_calls) in [(0, 1), (2, 3)] {
            let policy = RetryPolicy { max_attempts: 6, auth_retries, ..tiny() };
            let calls = AtomicU32::new(0);
            let out: Result<(), _> = run(&policy, None, &CancellationToken::new(), |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Err(http(401).into()) }
            })
            .await;
            assert_eq!(calls.load(Ordering::SeqCst), expected_calls);
            assert_eq!(out.err().and_then(|e| e.status_code()), Some(401));
        }
    }

    #[tokio::test]
    async fn final_errors_are_not_retried() {
        let calls = AtomicU32::new(0);
        let out: Result<(), _> = run(&tiny(), None, &CancellationToken::new(), |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                Err(AttemptError {
                    error: ProviderError::Truncated("x".into()),
                    retry_after: None,
                    emitted_output: true,
                })
            }
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(matches!(out, Err(ProviderError::Truncated(_))));
    }

    #[tokio::test]
    async fn cancel_interrupts_backoff_sleep() {
        let policy = RetryPolicy { base_delay: Duration::from_secs(30), max_delay: Duration::from_secs(30), ..tiny() };
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            c.cancel();
        });
        let started = std::time::Instant::now();
        let out: Result<(), _> = run(&policy, None, &cancel, |_| async { Err(http(503).into()) }).await;
        assert!(matches!(out, Err(ProviderError::Cancelled)));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
