//! `skipper tenants add|remove|rotate|list`: edits the tenants and users of the server's
//! configuration in place (comments and the rest of the file kept, `toml_edit`). A fresh token
//! is printed once; the file holds only its SHA-256. The result is checked as the server would
//! read it before it replaces the file (atomically, keeping its permissions).

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};
use rand::RngCore;
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

use super::args::{TenantsArgs, TenantsCommand};
use super::config::{check_name, ServerConfig};

/// What the operator does next for a running server to see the change.
const APPLY: &str = "a running `skipper serve` applies it within seconds (or at once on SIGHUP)";

pub fn run(args: TenantsArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let path = args.config.as_path();
    match args.command {
        TenantsCommand::List => list(path, out),
        TenantsCommand::Add { tenant, user } => {
            check_name(&tenant)?;
            if let Some(user) = &user {
                check_name(user)?;
            }
            let token = fresh_token();
            let mut new_tenant = false;
            edit(path, |doc| {
                new_tenant = add(doc, &tenant, user.as_deref(), &token)?;
                Ok(())
            })?;
            let who = who(&tenant, user.as_deref());
            writeln!(out, "token for {who} (shown once, not stored anywhere): {token}")?;
            if new_tenant {
                // Its workspace and sandbox are made at start (`rpc_server::tenancy::reload`).
                writeln!(out, "added {who} to {}; restart `skipper serve` to add a new tenant", path.display())?;
            } else {
                writeln!(out, "added {who} to {}; {APPLY}", path.display())?;
            }
            Ok(())
        }
        TenantsCommand::Remove { tenant, user } => {
            edit(path, |doc| remove(doc, &tenant, user.as_deref()))?;
            let who = who(&tenant, user.as_deref());
            writeln!(out, "removed {who} from {}; {APPLY}, and closes its connections", path.display())?;
            Ok(())
        }
        TenantsCommand::Rotate { tenant, user } => {
            let token = fresh_token();
            edit(path, |doc| rotate(doc, &tenant, user.as_deref(), &token))?;
            let who = who(&tenant, user.as_deref());
            writeln!(out, "new token for {who} (shown once, not stored anywhere): {token}")?;
            writeln!(out, "the old token stops working, and its connections close, when {APPLY}")?;
            Ok(())
        }
    }
}

fn who(tenant: &str, user: Option<&str>) -> String {
    match user {
        Some(user) => format!("user {user} of tenant {tenant}"),
        None => format!("tenant {tenant}"),
    }
}

/// 32 random bytes as hex: 256 bits, safe to put in a header or a URL.
pub fn fresh_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn digest(token: &str) -> String {
    hex::encode(rpc_server::tenancy::token_digest(token))
}

/// Reads `path` (a missing file is an empty configuration), applies `change`, checks the
/// result as `skipper serve` would read it, and replaces the file.
fn edit(path: &Path, change: impl FnOnce(&mut DocumentMut) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut doc: DocumentMut = text.parse().with_context(|| format!("in {}", path.display()))?;
    change(&mut doc)?;
    let text = doc.to_string();
    ServerConfig::parse(&text).context("the edited configuration would not be valid; the file is unchanged")?;
    write_atomically(path, &text)
}

fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("server.toml");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        // The operator may have made it private; the new file is as private.
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

fn tenants(doc: &mut DocumentMut) -> anyhow::Result<&mut ArrayOfTables> {
    let item = doc.entry("tenants").or_insert(Item::ArrayOfTables(ArrayOfTables::new()));
    item.as_array_of_tables_mut().context("`tenants` is not a list of [[tenants]] tables")
}

fn named<'a>(list: &'a mut ArrayOfTables, name: &str) -> Option<&'a mut Table> {
    list.iter_mut().find(|t| t.get("name").and_then(Item::as_str) == Some(name))
}

fn users(tenant: &mut Table) -> anyhow::Result<&mut ArrayOfTables> {
    let item = tenant.entry("users").or_insert(Item::ArrayOfTables(ArrayOfTables::new()));
    item.as_array_of_tables_mut().context("`users` of a tenant is not a list of [[tenants.users]] tables")
}

fn entry(name: &str, token: &str) -> Table {
    let mut table = Table::new();
    table.insert("name", toml_edit::value(name));
    table.insert("token_sha256", toml_edit::value(digest(token)));
    table
}

/// Adds the tenant or the user; `Ok(true)` when the tenant is new.
fn add(doc: &mut DocumentMut, tenant: &str, user: Option<&str>, token: &str) -> anyhow::Result<bool> {
    let list = tenants(doc)?;
    let Some(user) = user else {
        if named(list, tenant).is_some() {
            bail!("tenant {tenant} is already configured (rotate its token with `skipper tenants rotate {tenant}`)");
        }
        list.push(entry(tenant, token));
        return Ok(true);
    };
    let new_tenant = named(list, tenant).is_none();
    if new_tenant {
        let mut table = Table::new();
        table.insert("name", toml_edit::value(tenant));
        list.push(table);
    }
    let table = named(list, tenant).context("the tenant just added")?;
    let users = users(table)?;
    if named(users, user).is_some() {
        bail!("user {user} of tenant {tenant} is already configured");
    }
    users.push(entry(user, token));
    Ok(new_tenant)
}

fn remove(doc: &mut DocumentMut, tenant: &str, user: Option<&str>) -> anyhow::Result<()> {
    let list = tenants(doc)?;
    let Some(user) = user else {
        let at = list.iter().position(|t| t.get("name").and_then(Item::as_str) == Some(tenant));
        list.remove(at.with_context(|| format!("no tenant {tenant} is configured"))?);
        return Ok(());
    };
    let table = named(list, tenant).with_context(|| format!("no tenant {tenant} is configured"))?;
    let users = users(table)?;
    let at = users.iter().position(|t| t.get("name").and_then(Item::as_str) == Some(user));
    users.remove(at.with_context(|| format!("tenant {tenant} has no user {user}"))?);
    Ok(())
}

fn rotate(doc: &mut DocumentMut, tenant: &str, user: Option<&str>, token: &str) -> anyhow::Result<()> {
    let list = tenants(doc)?;
    let table = named(list, tenant).with_context(|| format!("no tenant {tenant} is configured"))?;
    let table = match user {
        None => {
            if !table.contains_key("token_sha256") {
                bail!("tenant {tenant} has no token of its own (its users connect with theirs)");
            }
            table
        }
        Some(user) => named(users(table)?, user).with_context(|| format!("tenant {tenant} has no user {user}"))?,
    };
    table.insert("token_sha256", toml_edit::value(digest(token)));
    Ok(())
}

fn list(path: &Path, out: &mut impl Write) -> anyhow::Result<()> {
    let config = ServerConfig::load(path, true)?;
    if config.tenants.is_empty() {
        writeln!(out, "no tenants in {} (`skipper serve` runs one, `default`, on loopback)", path.display())?;
    }
    let source = |var: &Option<String>, file: &Option<std::path::PathBuf>| match (var, file) {
        (Some(var), _) => format!("${var}"),
        (None, Some(file)) => file.display().to_string(),
        (None, None) => "-".to_string(),
    };
    for t in &config.tenants {
        let own = if t.token_sha256.is_some() { "own token" } else { "users only" };
        let fallback = t.server_fallback.unwrap_or(config.credentials.server_fallback);
        let provider = t.provider.as_ref().map_or_else(|| "-".to_string(), |p| p.base_url.clone());
        writeln!(
            out,
            "{}\t{own}\tgithub token: {}\tprovider: {provider}\tserver fallback: {}",
            t.name,
            source(&t.github_token_env, &t.github_token_file),
            if fallback { "yes" } else { "no" },
        )?;
        for u in &t.users {
            writeln!(out, "  {}\tgithub token: {}", u.name, source(&u.github_token_env, &u.github_token_file))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn run_in(path: &Path, args: &[&str]) -> anyhow::Result<String> {
        let mut argv = vec!["skipper tenants", "--config", path.to_str().unwrap()];
        argv.extend_from_slice(args);
        let mut out = Vec::new();
        run(TenantsArgs::try_parse_from(argv)?, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    fn token_of(printed: &str) -> String {
        printed.lines().next().unwrap().rsplit(' ').next().unwrap().to_string()
    }

    #[test]
    fn add_rotate_and_remove_edit_the_file_and_keep_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.toml");
        std::fs::write(&path, "# the team's server\n[cluster]\nnode_id = \"n1\" # this node\n").unwrap();

        let alpha = token_of(&run_in(&path, &["add", "alpha"]).unwrap());
        let alice = token_of(&run_in(&path, &["add", "alpha", "--user", "alice"]).unwrap());
        let bob = token_of(&run_in(&path, &["add", "beta", "--user", "bob"]).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# the team's server") && text.contains("# this node"), "comments are kept:\n{text}");
        for token in [&alpha, &alice, &bob] {
            assert!(!text.contains(token.as_str()), "only digests are stored");
        }
        let config = ServerConfig::parse(&text).unwrap();
        assert_eq!(config.cluster.node_id, "n1");
        assert_eq!(config.tenants[0].token_sha256.as_deref(), Some(digest(&alpha).as_str()));
        assert_eq!(config.tenants[0].users[0].token_sha256, digest(&alice));
        assert_eq!(config.tenants[1].token_sha256, None, "a tenant added for a user has no token of its own");
        assert_eq!(config.tenants[1].users[0].name, "bob");

        let fresh = token_of(&run_in(&path, &["rotate", "alpha", "--user", "alice"]).unwrap());
        let config = ServerConfig::load(&path, true).unwrap();
        assert_eq!(config.tenants[0].users[0].token_sha256, digest(&fresh));
        assert_ne!(fresh, alice);

        let listed = run_in(&path, &["list"]).unwrap();
        assert!(
            listed.contains("alpha\town token") && listed.contains("  alice") && listed.contains("beta\tusers only")
        );
        assert!(!listed.contains(&digest(&fresh)), "{listed}");

        run_in(&path, &["remove", "alpha", "--user", "alice"]).unwrap();
        run_in(&path, &["remove", "alpha"]).unwrap();
        let config = ServerConfig::load(&path, true).unwrap();
        assert_eq!(config.tenants.len(), 1);
        assert_eq!(config.tenants[0].name, "beta");
    }

    #[test]
    fn what_would_break_the_file_is_refused_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.toml");
        run_in(&path, &["add", "beta", "--user", "bob"]).unwrap();
        let before = std::fs::read_to_string(&path).unwrap();
        for (args, says) in [
            (&["add", "a/b"][..], "name"),
            (&["add", "beta", "--user", "bob"], "already configured"),
            (&["rotate", "beta"], "no token of its own"),
            (&["rotate", "gamma"], "no tenant gamma"),
            (&["remove", "beta", "--user", "carol"], "no user carol"),
            // The tenant would be left with no token at all.
            (&["remove", "beta", "--user", "bob"], "not be valid"),
        ] {
            let err = format!("{:#}", run_in(&path, args).unwrap_err());
            assert!(err.contains(says), "{args:?}: {err}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), before, "{args:?} changed the file");
        }
    }
}
