//! Which session a `-p` run works in: a new one (optionally with the id and name given), or
//! one the options name (`--resume`, `--continue`, `--session-id`), found as the original
//! finds it.

use loop_engine::Engine;

use crate::cli::Cli;

/// The session a run works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    New { id: Option<String>, name: Option<String> },
    Existing(String),
}

/// What the options ask for, before the store is read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Asked {
    New,
    /// `--session-id`: that session, or a new one with that id.
    ById(String),
    /// `--resume VALUE`: a session by id, id prefix or name.
    Named(String),
    /// `--continue`, or `--resume` alone: the most recent session, else a new one.
    Latest,
}

fn asked(cli: &Cli) -> Asked {
    match (&cli.resume, &cli.session_id) {
        (Some(v), _) if !v.trim().is_empty() => Asked::Named(v.trim().to_string()),
        (Some(_), _) => Asked::Latest,
        _ if cli.continue_session => Asked::Latest,
        (None, Some(id)) => Asked::ById(id.trim().to_string()),
        (None, None) => Asked::New,
    }
}

/// The shortest id prefix `--resume` accepts (shorter ones match too much).
const MIN_PREFIX: usize = 7;

/// Finds the session; `Err` is the message for stderr (the run exits 1 before any model call).
pub async fn choose(engine: &Engine, cli: &Cli) -> Result<Chosen, String> {
    let name = cli.name.clone().map(|n| n.trim().to_string());
    if name.as_deref() == Some("") {
        return Err("error: a session name cannot be empty".into());
    }
    match asked(cli) {
        Asked::New => Ok(Chosen::New { id: None, name }),
        Asked::Latest => match engine.last_id().await.map_err(|e| format!("Error: reading the sessions: {e}"))? {
            Some(id) => Ok(Chosen::Existing(id)),
            None => Ok(Chosen::New { id: None, name }),
        },
        Asked::ById(id) => {
            if exists(engine, &id).await? {
                Ok(Chosen::Existing(id))
            } else if is_uuid(&id) {
                Ok(Chosen::New { id: Some(id.to_ascii_lowercase()), name })
            } else {
                Err(format!(
                    "Error: No session matched '{id}'.\nThe value is not a valid UUID, so a new session cannot be \
                     created with it.\nTo continue a session by id:   skipper --session-id=<id>\nTo start a session with an \
                     id: skipper --session-id=<uuid>\nTo continue by name or prefix: skipper --resume=<name-or-prefix>"
                ))
            }
        }
        Asked::Named(value) => find(engine, &value).await?.map(Chosen::Existing).ok_or_else(|| {
            format!(
                "Error: No session or name matched '{value}'.\nTo continue a session by id:   skipper --resume=<id>\n\
                 To continue by name:           skipper --resume=<name>\nTo name a new session:         \
                 skipper --name=<name>\nTo continue the latest one:    skipper --continue"
            )
        }),
    }
}

async fn exists(engine: &Engine, id: &str) -> Result<bool, String> {
    Ok(engine.get(id).is_some()
        || engine.metadata(id).await.map_err(|e| format!("Error: reading the sessions: {e}"))?.is_some())
}

/// An RFC 4122 UUID, as a new session's id must be.
fn is_uuid(value: &str) -> bool {
    uuid::Uuid::parse_str(value).is_ok_and(|u| u.get_variant() == uuid::Variant::RFC4122 && !u.is_nil())
}

/// A session by exact id, then by id prefix (one session only), then by name (any case; the
/// most recent of that name).
async fn find(engine: &Engine, value: &str) -> Result<Option<String>, String> {
    if exists(engine, value).await? {
        return Ok(Some(value.to_string()));
    }
    let sessions =
        engine.list(&store::ListFilter::default()).await.map_err(|e| format!("Error: reading the sessions: {e}"))?;
    let lower = value.to_lowercase();
    if value.len() >= MIN_PREFIX {
        let mut by_prefix = sessions.iter().filter(|s| s.session_id.starts_with(&lower));
        if let (Some(only), None) = (by_prefix.next(), by_prefix.next()) {
            return Ok(Some(only.session_id.clone()));
        }
    }
    // Newest first: the most recent session of that name wins.
    Ok(sessions.iter().find(|s| s.name.to_lowercase() == lower).map(|s| s.session_id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(line: &str) -> Cli {
        crate::cli::parse(line.split_whitespace().map(String::from).collect()).unwrap()
    }

    #[test]
    fn the_options_say_which_session() {
        assert_eq!(asked(&cli("skipper -p go")), Asked::New);
        assert_eq!(asked(&cli("skipper -p go --continue")), Asked::Latest);
        assert_eq!(asked(&cli("skipper -p go --resume")), Asked::Latest);
        assert_eq!(asked(&cli("skipper --resume -p go")), Asked::Latest);
        assert_eq!(asked(&cli("skipper -p go --resume=fix-login")), Asked::Named("fix-login".into()));
        assert_eq!(asked(&cli("skipper -p go -r fix-login")), Asked::Named("fix-login".into()));
        assert_eq!(asked(&cli("skipper -p go --session-id abc")), Asked::ById("abc".into()));
    }

    #[test]
    fn options_that_contradict_each_other_are_a_usage_error() {
        let parse = |line: &str| crate::cli::parse(line.split_whitespace().map(String::from).collect());
        for line in [
            "skipper -p go --continue --session-id x",
            "skipper -p go --resume a --session-id x",
            "skipper -p go --resume a -n b",
            "skipper -p go --continue --name b",
        ] {
            let e = parse(line).unwrap_err();
            assert!(e.contains("cannot be used with"), "{line}: {e}");
        }
        assert!(parse("skipper -p go -n b --session-id 0b9f6a9e-2f41-4c3e-9f5e-4b1b8f0f6a11").is_ok());
    }

    #[test]
    fn only_a_real_uuid_names_a_new_session() {
        assert!(is_uuid("0b9f6a9e-2f41-4c3e-9f5e-4b1b8f0f6a11"));
        assert!(!is_uuid("11111111-2222-3333-4444-555555555555"), "not an RFC 4122 variant");
        assert!(!is_uuid("00000000-0000-0000-0000-000000000000"));
        assert!(!is_uuid("my-session"));
    }
}
