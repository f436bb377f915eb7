//! The built-in agent types the model may start through `task`: their names are the
//! original's (the `agent_type` enum of its `task` tool); what each may use is ours.

/// One built-in agent type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinAgent {
    pub name: &'static str,
    pub display_name: &'static str,
    pub description: &'static str,
    /// Tools it may use; `None`: everything the session offers (but `task`).
    pub tools: Option<&'static [&'static str]>,
    /// What it is told about its role.
    pub prompt: &'static str,
}

const READ_ONLY: &[&str] = &["bash", "read_bash", "stop_bash", "list_bash", "view", "grep", "glob"];

/// In the order of the original's `agent_type` enum.
pub const BUILTIN_AGENTS: &[BuiltinAgent] = &[
    BuiltinAgent {
        name: "explore",
        display_name: "Explore Agent",
        description:
            "Fast read-only exploration of a codebase: finds files, searches code and answers questions about it.",
        tools: Some(READ_ONLY),
        prompt: "You are an exploration agent. Investigate the codebase with the tools you have, without changing \
                 anything, and answer with what you found: concise, with file paths and the facts that matter.",
    },
    BuiltinAgent {
        name: "task",
        display_name: "Task Agent",
        description: "Runs a well-defined task (commands, builds, tests, queries) and reports the outcome briefly.",
        tools: None,
        prompt: "You are a task agent. Carry out the task you are given with the tools you have, then report the \
                 outcome briefly: what you ran and what came of it.",
    },
    BuiltinAgent {
        name: "general-purpose",
        display_name: "General Purpose Agent",
        description: "A capable agent with the full tool set for complex, multi-step work.",
        tools: None,
        prompt: "You are a general-purpose agent working on part of a larger task. Complete the work you are given \
                 with the tools you have, then summarize what you did and what you found.",
    },
    BuiltinAgent {
        name: "code-review",
        display_name: "Code Review Agent",
        description: "Reviews changes or code for bugs, security issues and correctness; reports only what matters.",
        tools: Some(READ_ONLY),
        prompt: "You are a code review agent. Examine the code or changes you are pointed at, without modifying \
                 anything, and report real problems only: bugs, security issues, logic errors.",
    },
    BuiltinAgent {
        name: "research",
        display_name: "Research Agent",
        description: "Gathers information from the codebase and the web and reports it.",
        tools: Some(&["view", "grep", "glob", "web_fetch"]),
        prompt: "You are a research agent. Gather the information you are asked for and report it with its sources.",
    },
    BuiltinAgent {
        name: "security-review",
        display_name: "Security Review Agent",
        description: "Looks for security vulnerabilities in code without changing it.",
        tools: Some(READ_ONLY),
        prompt: "You are a security review agent. Look for exploitable vulnerabilities in the code you are pointed \
                 at, without modifying anything, and report each with its location and impact.",
    },
];

pub fn get(name: &str) -> Option<&'static BuiltinAgent> {
    BUILTIN_AGENTS.iter().find(|a| a.name == name)
}
