//! `embed_migrations!` reads the migration files at compile time, but cargo only tracks files
//! that the compiler opened; a new migration folder would otherwise leave a stale build.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
