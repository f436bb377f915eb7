//! `skipper skill`.

use serde_json::{json, Value};

use super::Scratch;

fn skill(dir: &std::path::Path, name: &str, description: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    let file = dir.join(name).join("SKILL.md");
    std::fs::write(&file, format!("---\nname: {name}\ndescription: {description}\n---\nDo {name}.\n")).unwrap();
    file
}

fn json_file(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_default()).unwrap_or(Value::Null)
}

#[test]
fn list_add_disable_and_remove_skills() {
    let s = Scratch::new();
    assert!(s.run(&["skill", "list"]).status(0).stdout.starts_with("No skills found.\n"));
    skill(&s.work.join(".github/skills"), "lint", "Lints code");
    skill(&s.copilot_home().join("skills"), "deploy", "Deploys");
    let outside = s.home.parent().unwrap().join("outside");
    let file = skill(&outside, "fresh", "A fresh one");
    let custom = outside.join("custom");
    skill(&custom, "tidy", "");

    let added = s.run(&["skill", "add", file.to_str().unwrap()]).status(0).stdout;
    let copied = s.copilot_home().join("skills/fresh");
    assert_eq!(added, format!("Added personal skill \"fresh\" from file.\nCreated {}\n", copied.display()));
    assert!(copied.join("SKILL.md").is_file());
    let again = s.run(&["skill", "add", file.to_str().unwrap()]).status(1);
    assert_eq!(
        again.stderr,
        format!(
            "Failed to add skill: A skill already exists at {}. Remove it first or rename the skill.\n",
            copied.display()
        )
    );
    let project = s.run(&["skill", "add", "--project", file.to_str().unwrap()]).status(0).stdout;
    assert!(project.starts_with("Added project skill \"fresh\" from file."), "{project}");
    assert!(s.work.join(".github/skills/fresh/SKILL.md").is_file());

    let dir = s.run(&["skill", "add", custom.to_str().unwrap()]).status(0).stdout;
    assert!(dir.starts_with(&format!("Added custom skill directory: {}\n", custom.display())), "{dir}");
    assert_eq!(
        json_file(&s.copilot_home().join("settings.json")),
        json!({"skillDirectories": [custom.to_str().unwrap()]})
    );

    assert_eq!(s.run(&["skill", "disable", "lint"]).status(0).stdout, "Disabled skill \"lint\".\n");
    assert_eq!(
        json_file(&s.copilot_home().join("settings.json")),
        json!({"skillDirectories": [custom.to_str().unwrap()], "disabledSkills": ["lint"]}),
        "where the original keeps the list (sessions and the skills.config.* methods read it)"
    );
    assert_eq!(
        s.run(&["skill", "list"]).status(0).stdout,
        "Project skills:\n  fresh - A fresh one\n  lint (disabled) - Lints code\n\nPersonal skills:\n  deploy - Deploys\n\n\
         Custom skills:\n  tidy\n\n"
    );
    let listed: Value = serde_json::from_str(&s.run(&["skill", "list", "--json"]).status(0).stdout).unwrap();
    assert_eq!(
        listed[1],
        json!({"name": "lint", "description": "Lints code", "source": "project",
               "path": s.work.join(".github/skills/lint").to_str().unwrap(), "enabled": false})
    );
    assert_eq!(s.run(&["skill", "enable", "lint"]).status(0).stdout, "Enabled skill \"lint\".\n");
    assert_eq!(
        json_file(&s.copilot_home().join("settings.json")),
        json!({"skillDirectories": [custom.to_str().unwrap()], "disabledSkills": []})
    );

    let removed = s.run(&["skill", "remove", "fresh"]).status(0).stdout;
    assert_eq!(removed, format!("Removed skill \"fresh\" ({}).\n", s.work.join(".github/skills/fresh").display()));
    assert!(s.run(&["skill", "remove", "fresh"]).status(0).stdout.contains(copied.to_str().unwrap()));
    assert!(!copied.exists());
    let gone = s.run(&["skill", "remove", custom.to_str().unwrap()]).status(0).stdout;
    assert_eq!(gone, format!("Removed custom skill directory: {}\n", custom.display()));
}

#[test]
fn unknown_names_and_bad_sources_are_refused() {
    let s = Scratch::new();
    let missing = s.run(&["skill", "remove", "nosuch"]).status(1).stderr;
    assert_eq!(
        missing,
        "Error: No custom, personal, or project skill found matching \"nosuch\". Run `skipper skill list` to see removable skills.\n"
    );
    let warned = s.run(&["skill", "disable", "nosuch"]).status(0);
    assert!(
        warned.stderr.starts_with("Warning: no skill named \"nosuch\" is currently configured"),
        "{}",
        warned.stderr
    );
    assert_eq!(warned.stdout, "");

    let nowhere = s.run(&["skill", "add", "nowhere"]).status(1).stderr;
    assert_eq!(nowhere, format!("Failed to add skill: Path does not exist: {}\n", s.work.join("nowhere").display()));
    std::fs::write(s.work.join("NOTES.md"), "no header\n").unwrap();
    let plain = s.run(&["skill", "add", "NOTES.md"]).status(1).stderr;
    assert!(
        plain.starts_with("Failed to add skill: Not a valid skill: missing or malformed YAML frontmatter"),
        "{plain}"
    );
    let url = s.run(&["skill", "add", "https://example.com/x/SKILL.md"]).status(1).stderr;
    assert!(url.contains("needs network access"), "{url}");
    assert!(!s.copilot_home().join("skills").exists(), "nothing was created");
    assert!(s.run(&["skill", "add"]).status(1).stderr.contains("<SOURCE>"));
}
