//! `skipper instruction list`.

use serde_json::Value;

use super::Scratch;

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn lists_repository_working_directory_and_personal_sources() {
    let s = Scratch::new();
    assert_eq!(s.run(&["instruction", "list"]).status(0).stdout, "No instruction sources found.\n");
    assert_eq!(s.run(&["instruction", "list", "--json"]).status(0).stdout, "[]\n");

    write(&s.work.join("AGENTS.md"), "Use tabs.\n");
    write(&s.work.join(".github/copilot-instructions.md"), "Repo rules.\n");
    write(&s.work.join(".github/instructions/all.instructions.md"), "always\n");
    write(
        &s.work.join(".github/instructions/ts.instructions.md"),
        "---\napplyTo: \"**/*.ts\"\ndescription: TS rules\n---\nTS\n",
    );
    write(&s.work.join("CLAUDE.md"), "   \n");
    let personal = s.copilot_home().join("copilot-instructions.md");
    write(&personal, "Mine.\n");

    let text = s.run(&["instruction", "list"]).status(0).stdout;
    let expected = format!(
        "Repository instructions:\n  • .github/copilot-instructions.md\n      from .github/copilot-instructions.md\n  \
         • AGENTS.md\n      from AGENTS.md\n\nWorking directory instructions:\n  • all.instructions.md\n      \
         from .github/instructions/all.instructions.md\n  • ts.instructions.md - TS rules\n      \
         from .github/instructions/ts.instructions.md\n\nPersonal instructions:\n  • Home copilot-instructions.md\n      \
         from {}\n",
        personal.display()
    );
    assert_eq!(text, expected, "an empty CLAUDE.md is no source");

    let json: Value = serde_json::from_str(&s.run(&["instruction", "list", "--json"]).status(0).stdout).unwrap();
    let ids: Vec<&str> = json.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "home-copilot",
            "repo-copilot",
            "model-agents-md",
            "vscode-instructions/.github/instructions/all.instructions.md",
            "vscode-instructions/.github/instructions/ts.instructions.md"
        ]
    );
    assert_eq!(
        json[4],
        serde_json::json!({"id": "vscode-instructions/.github/instructions/ts.instructions.md", "label": "ts.instructions.md",
            "description": "TS rules", "location": "working-directory", "type": "vscode",
            "sourcePath": ".github/instructions/ts.instructions.md", "defaultDisabled": false, "applyTo": ["**/*.ts"]})
    );
}

#[test]
fn a_subdirectory_sees_the_repository_s_files_and_bad_usage_fails() {
    let s = Scratch::new();
    write(&s.work.join(".github/instructions/a.instructions.md"), "A\n");
    std::fs::create_dir_all(s.work.join("sub")).unwrap();
    let text = s.run(&["-C", "sub", "instruction", "list"]).status(0).stdout;
    assert_eq!(
        text,
        "Repository instructions:\n  • a.instructions.md\n      from .github/instructions/a.instructions.md\n"
    );
    let bad = s.run(&["instruction", "list", "--bogus"]).status(1);
    assert!(bad.stderr.contains("unexpected argument '--bogus'"), "{}", bad.stderr);
    assert!(s.run(&["instruction", "nope"]).status(1).stderr.contains("unrecognized subcommand"));
    assert!(s.run(&["instruction"]).status(0).stdout.contains("list"));
}
