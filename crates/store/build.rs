//! `sqlx::migrate!` embeds `migrations/{sqlite,postgres}` at compile time; without this, editing a migration
//! would not rebuild the crate.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
