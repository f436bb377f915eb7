//! `skipper tenants add NAME`: a fresh token, shown once, and its configuration lines.

use std::io::Write;

use rand::RngCore;

use super::args::{TenantsArgs, TenantsCommand};
use super::config::check_name;

pub fn run(args: TenantsArgs, out: &mut impl Write) -> anyhow::Result<()> {
    match args.command {
        TenantsCommand::Add { name } => {
            check_name(&name)?;
            let token = fresh_token();
            let digest = hex::encode(rpc_server::tenancy::token_digest(&token));
            writeln!(out, "token for tenant {name} (shown once, not stored anywhere): {token}")?;
            writeln!(out, "add to the server's config (config/server.toml):")?;
            writeln!(out)?;
            writeln!(out, "[[tenants]]\nname = \"{name}\"\ntoken_sha256 = \"{digest}\"")?;
            Ok(())
        }
    }
}

/// 32 random bytes as hex: 256 bits, safe to put in a header or a URL.
pub fn fresh_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn add_prints_a_token_whose_digest_is_the_config_line() {
        let mut out = Vec::new();
        run(TenantsArgs::parse_from(["skipper tenants", "add", "alpha"]), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let token = text.lines().next().unwrap().rsplit(' ').next().unwrap();
        let config = text.split_once("\n\n").unwrap().1;
        let parsed = super::super::config::ServerConfig::parse(config).unwrap();
        assert_eq!(parsed.tenants[0].name, "alpha");
        assert_eq!(parsed.tenants[0].token_sha256, hex::encode(rpc_server::tenancy::token_digest(token)));
        assert!(run(TenantsArgs::parse_from(["skipper tenants", "add", "a/b"]), &mut Vec::new()).is_err());
    }
}
