//! `skipper help [TOPIC]`.

use super::Scratch;

#[test]
fn topics_are_skippers_own_and_an_unknown_one_is_an_error() {
    let s = Scratch::new();
    let all = s.run(&["help"]).status(0).stdout;
    assert!(all.contains("--deny-tool") && all.contains("Help topics"), "{all}");
    for command in ["plugin", "skill", "instruction"] {
        assert!(all.lines().any(|l| l.trim_start().starts_with(command)), "{command} listed: {all}");
    }
    let config = s.run(&["help", "config"]).status(0).stdout;
    assert!(
        config.contains("skipper config") && config.contains("theme") && config.contains("one of: default, github"),
        "{config}"
    );
    let env = s.run(&["help", "environment"]).status(0).stdout;
    assert!(env.contains("COPILOT_HOME") && env.contains("COPILOT_PROVIDER_BASE_URL"), "{env}");
    let perms = s.run(&["help", "permissions"]).status(0).stdout;
    assert!(perms.contains("--allow-tool") && perms.contains("shell(git:*)"), "{perms}");
    assert!(s.run(&["help", "commands"]).status(0).stdout.contains("no interactive mode"));
    let r = s.run(&["help", "nosuch"]).status(1);
    assert!(r.stderr.starts_with("Unknown help topic: nosuch\nAvailable topics:\n  billing\n"), "{}", r.stderr);
    assert_eq!(r.stdout, "");
}
