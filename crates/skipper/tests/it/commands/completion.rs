//! `skipper completion`.

use super::Scratch;

#[test]
fn scripts_for_each_shell_name_the_commands_and_their_flags() {
    let s = Scratch::new();
    for shell in ["bash", "zsh", "fish"] {
        let script = s.run(&["completion", shell]).status(0).stdout;
        for word in [
            "config",
            "mcp",
            "plugin",
            "skill",
            "instruction",
            "marketplace",
            "completion",
            "allow-tool",
            "show-secrets",
        ] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    let r = s.run(&["completion", "powershell"]).status(1);
    assert!(r.stderr.contains("invalid value 'powershell'") && r.stderr.contains("bash, zsh, fish"), "{}", r.stderr);
    assert!(s.run(&["completion"]).status(1).stderr.contains("required"));
}

#[test]
fn the_bash_script_completes_commands() {
    let s = Scratch::new();
    let script = s.run(&["completion", "bash"]).status(0).stdout;
    let path = s.work.join("skipper.bash");
    std::fs::write(&path, script).unwrap();
    let probe = format!(
        "source {}; COMP_WORDS=(skipper mcp ''); COMP_CWORD=2; _skipper skipper '' mcp; echo \"${{COMPREPLY[@]}}\"",
        path.display()
    );
    let out = std::process::Command::new("bash").arg("-c").arg(probe).output().unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(words.contains("list") && words.contains("disable"), "{words}");
}

#[test]
fn a_reader_that_stops_early_is_no_crash() {
    // `skipper completion bash | head -1`: here the reading end is closed before the script is
    // written, so every write fails.
    let s = Scratch::new();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_skipper"))
        .args(["completion", "bash"])
        .env("COPILOT_HOME", s.copilot_home())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
