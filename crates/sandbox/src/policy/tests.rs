//! Each policy run for real under bubblewrap: what a command inside can see, write and reach.
//! Skipped with a message where the host cannot sandbox, unless `SKIPPER_REQUIRE_SANDBOX=1`
//! (CI installs bubblewrap and sets it) makes that a failure.

use std::net::TcpListener;
use std::process::{Command, Stdio};

use super::*;

fn sandbox_here() -> bool {
    if host_support().supported() {
        return true;
    }
    let reason = host_support().reason.clone().unwrap_or_default();
    assert!(std::env::var("SKIPPER_REQUIRE_SANDBOX").is_err(), "the sandbox is required here: {reason}");
    eprintln!("skipped: {reason}");
    false
}

/// Runs `script` with bash under `policy` in `cwd`; its exit code and output.
fn run(policy: &Policy, cwd: &Path, script: &str, env: &[(&str, &str)]) -> (i32, String) {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let args = [OsString::from("-c"), OsString::from(script)];
    let w = policy.wrap(OsStr::new("/bin/bash"), &args, cwd, &env).expect("wrap");
    let out = Command::new(&w.program)
        .args(&w.args)
        .env_clear()
        .envs(w.env)
        .stdin(Stdio::null())
        .output()
        .expect("bwrap runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

struct Dirs {
    _root: tempfile::TempDir,
    work: PathBuf,
    other: PathBuf,
    tmp: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    let other = root.path().join("other");
    let tmp = root.path().join("tmp");
    for d in [&work, &other, &tmp] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(other.join("secret.txt"), "beta's secret").unwrap();
    Dirs { _root: root, work, other, tmp }
}

fn policy(d: &Dirs) -> Policy {
    Policy { workspaces: vec![d.work.clone()], tmp: Some(d.tmp.clone()), cwd_writable: true, ..Default::default() }
}

const PATH: (&str, &str) = ("PATH", "/usr/bin:/bin");

#[test]
fn writes_land_in_the_workspace_and_nowhere_else() {
    if !sandbox_here() {
        return;
    }
    let d = dirs();
    let (code, out) = run(&policy(&d), &d.work, "echo hi > made.txt && pwd", &[PATH]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.trim(), real(&d.work).to_str().unwrap());
    assert_eq!(std::fs::read_to_string(d.work.join("made.txt")).unwrap(), "hi\n");

    let script = format!(
        "echo x > {0}/secret.txt; cat {0}/secret.txt; echo x > /etc/owned; touch /usr/owned",
        d.other.display()
    );
    let (_, out) = run(&policy(&d), &d.work, &script, &[PATH]);
    assert!(!out.contains("beta's secret"), "{out}");
    assert_eq!(std::fs::read_to_string(d.other.join("secret.txt")).unwrap(), "beta's secret");
    assert!(!Path::new("/etc/owned").exists() && !Path::new("/usr/owned").exists());
}

#[test]
fn the_whole_workspace_is_writable_from_a_directory_inside_it() {
    if !sandbox_here() {
        return;
    }
    let d = dirs();
    std::fs::create_dir(d.work.join("sub")).unwrap();
    let (code, out) = run(&policy(&d), &d.work.join("sub"), "echo up > ../top.txt", &[PATH]);
    assert_eq!(code, 0, "{out}");
    assert!(d.work.join("top.txt").exists());
    // Started outside every workspace, only its own directory is writable.
    let (code, _) = run(&policy(&d), &d.other, "echo x > mine.txt", &[PATH]);
    assert_eq!(code, 0);
    assert!(d.other.join("mine.txt").exists());
    let (_, out) = run(&policy(&d), &d.other, "ls ../work 2>/dev/null; echo end", &[PATH]);
    assert_eq!(out.trim(), "end", "other workspaces stay out of sight: {out}");
    // Unless the policy says so, not even that.
    let strict = Policy { cwd_writable: false, ..policy(&d) };
    let (_, out) = run(&strict, &d.other, "cat secret.txt; echo x > strict.txt; echo end", &[PATH]);
    assert!(out.contains("beta's secret") && out.contains("end"), "it may look where it starts: {out}");
    assert!(!d.other.join("strict.txt").exists(), "{out}");
}

#[test]
fn a_policy_held_to_its_workspaces_starts_nothing_elsewhere() {
    let d = dirs();
    let held = Policy { within_workspaces: true, cwd_writable: false, ..policy(&d) };
    let args = [OsString::from("-c"), OsString::from("cat secret.txt")];
    let err = held.wrap(OsStr::new("/bin/bash"), &args, &d.other, &[]).unwrap_err();
    assert!(err.contains("outside the session's workspace"), "{err}");
    // Through a symlink inside the workspace that leads out: the real directory counts.
    std::os::unix::fs::symlink(&d.other, d.work.join("door")).unwrap();
    assert!(held.wrap(OsStr::new("/bin/bash"), &args, &d.work.join("door"), &[]).is_err());
    if sandbox_here() {
        assert!(held.wrap(OsStr::new("/bin/bash"), &args, &d.work, &[]).is_ok());
    }
}

#[test]
fn a_policy_with_a_refusal_starts_nothing() {
    let p = Policy { refusal: Some("network filtering is unavailable".into()), ..Default::default() };
    let err = p.wrap(OsStr::new("/bin/true"), &[], Path::new("/"), &[]).unwrap_err();
    assert_eq!(err, "network filtering is unavailable");
}

#[test]
fn a_denied_path_inside_the_workspace_is_hidden() {
    if !sandbox_here() {
        return;
    }
    let d = dirs();
    std::fs::create_dir(d.work.join(".secrets")).unwrap();
    std::fs::write(d.work.join(".secrets/key"), "KEY-CONTENT").unwrap();
    std::fs::write(d.work.join("token.txt"), "TOKEN-CONTENT").unwrap();
    let mut p = policy(&d);
    p.denied = vec![d.work.join(".secrets"), d.work.join("token.txt")];
    let (_, out) = run(&p, &d.work, "ls .secrets; cat .secrets/key token.txt; echo end", &[PATH]);
    assert!(out.contains("end") && !out.contains("KEY-CONTENT") && !out.contains("TOKEN-CONTENT"), "{out}");
    assert_eq!(std::fs::read_to_string(d.work.join("token.txt")).unwrap(), "TOKEN-CONTENT", "hidden, not changed");
}

#[test]
fn the_tmp_directory_is_the_sessions_and_lasts_between_commands() {
    if !sandbox_here() {
        return;
    }
    let d = dirs();
    let (code, out) = run(&policy(&d), &d.work, "echo kept > /tmp/note && echo $TMPDIR", &[PATH, ("TMPDIR", "/var/x")]);
    assert_eq!((code, out.trim()), (0, "/tmp"));
    assert_eq!(std::fs::read_to_string(d.tmp.join("note")).unwrap(), "kept\n");
    let (_, out) = run(&policy(&d), &d.work, "cat /tmp/note", &[PATH]);
    assert_eq!(out.trim(), "kept");
}

#[test]
fn no_other_process_is_visible_and_no_privilege_can_be_gained() {
    if !sandbox_here() {
        return;
    }
    let d = dirs();
    let me = std::process::id();
    let script = format!("test -e /proc/{me} && echo SEEN; grep -E '^(NoNewPrivs|CapEff)' /proc/self/status");
    let (_, out) = run(&policy(&d), &d.work, &script, &[PATH]);
    assert!(!out.contains("SEEN"), "{out}");
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
}

#[test]
fn the_network_is_reachable_only_when_the_policy_allows_it() {
    if !sandbox_here() {
        return;
    }
    let d = dirs();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("(echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo REFUSED");
    let (_, out) = run(&policy(&d), &d.work, &script, &[PATH]);
    assert_eq!(out.trim(), "REFUSED");
    let open = Policy { network: true, ..policy(&d) };
    let (_, out) = run(&open, &d.work, &script, &[PATH]);
    assert_eq!(out.trim(), "CONNECTED");
}

#[test]
fn an_allowlist_keeps_the_servers_secrets_out_of_the_environment() {
    if !sandbox_here() {
        return;
    }
    let d = dirs();
    let p = Policy { env_allow: Some(crate::SAFE_ENV.iter().map(|s| s.to_string()).collect()), ..policy(&d) };
    let (_, out) = run(&p, &d.work, "env", &[PATH, ("GH_TOKEN", "gho_server"), ("DATABASE_URL", "postgres://pw")]);
    assert!(!out.contains("gho_server") && !out.contains("postgres://"), "{out}");
    assert!(out.contains("HOME=/tmp"), "{out}");
}

/// Under the seccomp filter ordinary work goes on — processes, threads (the C library falls
/// back from `clone3` to `clone`), files — and what reaches past the namespaces is refused.
#[test]
fn the_seccomp_filter_refuses_new_namespaces_and_keyrings_only() {
    if !sandbox_here() {
        return;
    }
    let d = dirs();
    let filters = tempfile::tempdir().unwrap();
    let p =
        Policy { seccomp: Some(std::sync::Arc::new(crate::Seccomp::install(filters.path()).unwrap())), ..policy(&d) };
    let (code, out) = run(&p, &d.work, "echo hi > f && cat f && (sleep 0 & wait) && echo forked", &[PATH]);
    assert_eq!((code, out.as_str()), (0, "hi\nforked\n"));
    let (code, out) = run(&p, &d.work, "unshare -U true && echo UNSHARED", &[PATH]);
    assert!(code != 0 && out.contains("Operation not permitted") && !out.contains("UNSHARED"), "{code}: {out}");
    let (code, _) = run(&policy(&d), &d.work, "unshare -U true", &[PATH]);
    assert_eq!(code, 0, "without the filter the same command works (so the refusal above is the filter's)");
    if Path::new("/usr/bin/python3").exists() {
        let script = "import ctypes, threading\n\
            libc = ctypes.CDLL(None, use_errno=True)\n\
            t = threading.Thread(target=lambda: None); t.start(); t.join()\n\
            r = libc.syscall(NR_KEYCTL, 0, -4, 0, 0, 0)\n\
            print('threads', 'keyctl', r, ctypes.get_errno())\n";
        let script = script.replace("NR_KEYCTL", &libc::SYS_keyctl.to_string());
        let (code, out) = run(&p, &d.work, &format!("python3 -c \"{script}\""), &[PATH]);
        assert_eq!((code, out.trim()), (0, format!("threads keyctl -1 {}", libc::EPERM).as_str()), "{out}");
    }
}
