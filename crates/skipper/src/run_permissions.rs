//! `-p`'s permission options, read into the engine's one permission model
//! ([`loop_engine::permission_settings::SessionPermissions`]): rules, directories and URLs.

use std::path::{Path, PathBuf};

use loop_engine::permission_rules::{parse_rule, url_rule};
use loop_engine::permission_settings::SessionPermissions;
use protocol::generated::types::PermissionRule;

use crate::cli::Cli;

#[derive(Debug, Clone, Default)]
pub struct RunPermissions {
    approved: Vec<PermissionRule>,
    denied: Vec<PermissionRule>,
    directories: Vec<PathBuf>,
    all_paths: bool,
    all_urls: bool,
    no_temp_dir: bool,
}

impl RunPermissions {
    /// Reads the options; a pattern that does not parse is the original's usage error.
    pub fn from_cli(cli: &Cli, cwd: &Path) -> Result<Self, String> {
        let rules = |option: &str, values: &[String]| -> Result<Vec<PermissionRule>, String> {
            values.iter().map(|v| parse_rule(v).map_err(|e| format!("Invalid {option} value. Error: {e}"))).collect()
        };
        let mut approved = rules("--allow-tool", &cli.allow_tool)?;
        let mut denied = rules("--deny-tool", &cli.deny_tool)?;
        approved.extend(cli.allow_url.iter().map(|u| url_rule(u)));
        denied.extend(cli.deny_url.iter().map(|u| url_rule(u)));
        let everything = cli.allow_all || cli.yolo;
        Ok(Self {
            approved,
            denied,
            directories: cli.add_dir.iter().map(|d| cwd.join(d)).collect(),
            all_paths: everything || cli.allow_all_paths,
            all_urls: everything || cli.allow_all_urls,
            no_temp_dir: cli.disallow_temp_dir,
        })
    }

    pub fn apply(&self, p: &mut SessionPermissions) {
        if self.no_temp_dir {
            let temp = loop_engine::permission_settings::normalize(&std::env::temp_dir());
            let primary = p.primary.clone();
            p.directories.retain(|d| *d != temp || *d == primary);
        }
        for dir in &self.directories {
            p.allow(dir);
        }
        p.approved.extend(self.approved.iter().cloned());
        p.denied.extend(self.denied.iter().cloned());
        p.unrestricted_paths |= self.all_paths;
        p.unrestricted_urls |= self.all_urls;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &str) -> Cli {
        crate::cli::parse(args.split_whitespace().map(String::from).collect()).unwrap()
    }

    #[test]
    fn options_become_rules_directories_and_urls() {
        let mut args: Vec<String> =
            "skipper -p go --allow-tool shell(git:*) write".split_whitespace().map(String::from).collect();
        args.push("--deny-tool=shell(git push),shell(rm)".into());
        args.extend(
            "--deny-url example.com --add-dir ../data --disallow-temp-dir".split_whitespace().map(String::from),
        );
        let c = crate::cli::parse(args).unwrap();
        let run = RunPermissions::from_cli(&c, Path::new("/work/repo")).unwrap();
        let mut p = SessionPermissions::for_cwd(Path::new("/work/repo"));
        run.apply(&mut p);
        let shown =
            |rules: &[PermissionRule]| rules.iter().map(loop_engine::permission_rules::render).collect::<Vec<_>>();
        assert_eq!(shown(&p.approved), vec!["shell(git:*)", "write"]);
        assert_eq!(shown(&p.denied), vec!["shell(git push)", "shell(rm)", "url(https://example.com)"]);
        assert!(p.within_allowed(Path::new("/work/data/x")));
        assert!(!p.within_allowed(&std::env::temp_dir().join("x")));
        assert!(!p.unrestricted_paths && !p.unrestricted_urls);
        let all = RunPermissions::from_cli(&cli("skipper -p go --yolo"), Path::new("/w")).unwrap();
        let mut p = SessionPermissions::for_cwd(Path::new("/w"));
        all.apply(&mut p);
        assert!(p.unrestricted_paths && p.unrestricted_urls);
    }

    #[test]
    fn a_bad_pattern_is_the_originals_usage_error() {
        let err = RunPermissions::from_cli(&cli("skipper -p go --deny-tool shell("), Path::new("/w")).unwrap_err();
        assert_eq!(err, "Invalid --deny-tool value. Error: Invalid rule format: shell(");
    }
}
