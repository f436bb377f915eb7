//! Integration tests driving the real `skipper` binary over JSON-RPC against `fake-model`.
//!
//! Every session event a test sees is validated against the official
//! `session-events.schema.json` (see `schema.rs`); tests end with `assert_schema_clean()`.

#![allow(clippy::unwrap_used)]

mod byok;
mod cluster;
mod commands;
mod conversation;
mod extensions;
mod faults;
mod harness;
mod hostile;
mod inference;
mod lifecycle;
mod original_methods;
mod persistence;
mod protocol;
mod runner;
mod runner_options;
mod runner_permissions;
mod sandbox;
mod schema;
mod schema_selftest;
mod serve;
mod tenant_config;
