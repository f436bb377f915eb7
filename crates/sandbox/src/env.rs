//! The environment a sandboxed process gets when its policy allows only a known-safe set:
//! nothing the server holds (tokens, database passwords, its own settings) reaches it unless a
//! policy names the variable.

/// Variables that say how to run programs and format text, and nothing secret.
pub const SAFE_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_COLLATE",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "PAGER",
    "GIT_PAGER",
    "USER",
    "LOGNAME",
    "SHELL",
];

/// `given` with only the variables `allow` names (when it names any) and none that `deny`
/// names, then the ones the sandbox itself decides: `TMPDIR` is the sandbox's `/tmp`, and with
/// an allowlist `HOME` is too (the server's home is not inside).
pub(crate) fn build(given: &[(String, String)], allow: Option<&[String]>, deny: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = given
        .iter()
        .filter(|(k, _)| allow.is_none_or(|names| names.iter().any(|n| n == k)))
        .filter(|(k, _)| !deny.iter().any(|n| n == k))
        .filter(|(k, _)| k != "TMPDIR" && (allow.is_none() || k != "HOME"))
        .cloned()
        .collect();
    out.push(("TMPDIR".into(), "/tmp".into()));
    if allow.is_some() {
        out.push(("HOME".into(), "/tmp".into()));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn an_allowlist_keeps_only_what_it_names() {
        let given = env(&[("PATH", "/usr/bin"), ("GH_TOKEN", "gho_secret"), ("HOME", "/root"), ("TMPDIR", "/var/t")]);
        let allow: Vec<String> = SAFE_ENV.iter().map(|s| s.to_string()).collect();
        let out = build(&given, Some(&allow), &[]);
        assert_eq!(out, env(&[("PATH", "/usr/bin"), ("TMPDIR", "/tmp"), ("HOME", "/tmp")]));
    }

    #[test]
    fn without_an_allowlist_the_given_environment_stays_but_tmpdir() {
        let given = env(&[("PATH", "/usr/bin"), ("HOME", "/root"), ("TMPDIR", "/var/t")]);
        assert_eq!(build(&given, None, &[]), env(&[("PATH", "/usr/bin"), ("HOME", "/root"), ("TMPDIR", "/tmp")]));
        let denied = build(&given, None, &["HOME".to_string()]);
        assert_eq!(denied, env(&[("PATH", "/usr/bin"), ("TMPDIR", "/tmp")]));
    }
}
