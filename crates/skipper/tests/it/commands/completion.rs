//! `skipper completion`.

use super::Scratch;

#[test]
fn scripts_for_each_shell_name_the_commands_and_their_flags() {
    let s = Scratch::new();
    for shell in ["bash", "zsh", "fish"] {
        let script = s.run(&["completion", shell]).status(0).stdout;
        for word in ["config", "mcp", "completion", "allow-tool", "show-secrets"] {
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
