//! Agents, skills, plugins, instructions and MCP configuration: what a user and a project
//! configure, found on disk and handed to the engine as typed values.
//!
//! Each configuration file under `$COPILOT_HOME` has one owner module here, the only code that
//! reads or writes it: `config.json` ([`user_config`]), `settings.json` ([`user_settings`]),
//! `mcp-config.json` ([`mcp_config`]), a repository's `.github/copilot/settings*.json`
//! ([`repo_settings`]). Each is a [`json_file::JsonFile`]: read as its type, or
//! changed by one `update` under a per-file lock, keeping the keys its type does not name.
//!
//! This crate knows nothing of sessions, the engine or the wire: it depends on `protocol` for
//! the shapes the discovery methods answer with, and on no other crate of the workspace.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod agents;
mod frontmatter;
pub mod installed_plugin;
pub mod instructions;
pub mod json_file;
pub mod mcp_config;
pub mod plugins;
pub mod read_scope;
pub mod repo_settings;
pub mod sandbox_features;
pub mod sandbox_settings;
pub mod settings_edit;
pub mod settings_keys;
pub mod skills;
pub mod user_config;
pub mod user_mcp;
pub mod user_settings;
pub mod workspace_mcp;

pub use json_file::{FileError, JsonFile};
