//! `cargo run -p protocol-codegen` regenerates `crates/protocol/src/generated/`;
//! `-- --check` only compares and exits 1 when the committed files are out of date.

use std::process::ExitCode;

use anyhow::{bail, Result};
use protocol_codegen::{check, generate, write, Paths};

fn run() -> Result<ExitCode> {
    let mut check_only = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--check" => check_only = true,
            "-h" | "--help" => {
                println!(
                    "usage: protocol-codegen [--check]\n\n\
                     Generates crates/protocol/src/generated from shared/schemas/*.json and\n\
                     crates/protocol-codegen/allowlist.toml. --check compares instead of writing.\n\
                     Schemas are read from $SKIPPER_SHARED_DIR/schemas when set."
                );
                return Ok(ExitCode::SUCCESS);
            }
            other => bail!("unknown argument `{other}` (try --help)"),
        }
    }
    let paths = Paths::workspace();
    let output = generate(&paths)?;
    if check_only {
        let problems = check(&paths, &output)?;
        if problems.is_empty() {
            println!("generated protocol types are up to date");
            return Ok(ExitCode::SUCCESS);
        }
        for p in &problems {
            eprintln!("{p}");
        }
        eprintln!("run `just codegen` (cargo run -p protocol-codegen) and commit the result");
        return Ok(ExitCode::FAILURE);
    }
    let changed = write(&paths, &output)?;
    print!("{}", output.summary);
    if changed.is_empty() {
        println!("no changes in {}", paths.out_dir.display());
    } else {
        println!("updated in {}: {}", paths.out_dir.display(), changed.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("protocol-codegen: {e:#}");
            ExitCode::from(2)
        }
    }
}
