//! In-process engine tests: the engine against the fake model on loopback, sessions driven
//! through their handles (see `support`).

mod subagent;
mod support;
