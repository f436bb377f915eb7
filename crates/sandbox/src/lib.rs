//! The command sandbox: every process a session starts for its model (the bash tool, user
//! shells, stdio MCP servers) can be run under bubblewrap, so that it sees a read-only system,
//! writes only where its policy says, has its own process, IPC, user (and, unless allowed,
//! network) namespaces, and dies with whoever started it.
//!
//! A [`Policy`] says what a session's processes may do; [`Policy::wrap`] turns one command line
//! into the `bwrap` command line that runs it so. [`host_support`] says whether this host can
//! (bubblewrap on `PATH`, user namespaces allowed), probed once per process.
//!
//! [`egress`] is the same boundary for what the server does in-process on a session's behalf
//! (its HTTP MCP servers, its own model provider, `web_fetch`): which addresses it may reach.

mod cgroup;
pub mod egress;
mod env;
mod host;
pub mod net;
mod policy;
mod seccomp;

pub use cgroup::{Cgroup, Limits};
pub use env::SAFE_ENV;
pub use host::{host_support, HostSupport};
pub use policy::{Policy, ReadRefusal, Wrapped, WriteRefusal};
pub use seccomp::Seccomp;
