//! Links the `skipper` binary with packed relative relocations (`DT_RELR`) where the linker and
//! the C library support them.
//!
//! A position-independent Rust binary carries tens of thousands of relative relocations (every
//! vtable, every panic location, every static table of `&str`). In the classic `RELA` form
//! they are 24 bytes each, about 1.6 MB here, and the dynamic loader reads all of it at every
//! start: a `-p` run paid that in page faults before `main`. `RELR` packs the same relocations
//! into a few kilobytes of bitmaps; the binary stays position-independent (address layout
//! randomisation is kept).
//!
//! The probe links and runs a tiny C program with the flag: an older linker or C library
//! (glibc before 2.36 cannot load such a binary) leaves the default.

use std::path::Path;
use std::process::Command;

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let target = std::env::var("TARGET").unwrap_or_default();
    // Only a native glibc build is probed: the probe must run on the machine that links.
    if os != "linux" || env != "gnu" || host != target {
        return;
    }
    let Some(out) = std::env::var_os("OUT_DIR") else { return };
    if probe(Path::new(&out)) {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    }
}

fn probe(out: &Path) -> bool {
    let source = out.join("relr_probe.c");
    let binary = out.join("relr_probe");
    // A pointer in static data gives the program a relative relocation, so the linker marks it
    // as needing the C library's RELR support and the run below checks that support.
    let program = "static const char *p = \"x\";\nint main(void) { return p[0] != 'x'; }\n";
    if std::fs::write(&source, program).is_err() {
        return false;
    }
    let linked = Command::new("cc")
        .args(["-fPIE", "-pie", FLAG, "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .is_ok_and(|o| o.status.success() && o.stderr.is_empty());
    linked && Command::new(&binary).status().is_ok_and(|s| s.success())
}
