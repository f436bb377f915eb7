//! [`EngineError`]: what the engine and a session's handle report. A leaf, so every part of
//! the engine can return it without depending on the crate root.

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("Session not found: {0}")]
    SessionNotFound(String),
    #[error("Session already exists: {0}")]
    SessionExists(String),
    #[error("Failed to load session events: {0}")]
    Load(store::StoreError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("{0}")]
    Model(#[from] llm_providers::ProviderError),
    #[error("Invalid provider configuration: {0}")]
    InvalidProviders(String),
    /// A compaction or summary the client asked for did not happen.
    #[error("{0}")]
    Compaction(String),
    /// A request the session refused (an unknown agent or skill, ...).
    #[error("{0}")]
    Failed(String),
}
