// Cargo sets these variables for every build script; their absence is a broken toolchain,
// not input, so expect() names it.
#![allow(clippy::expect_used)]

//! Finds the built-in grammars: every `grammars/*.toml` is compiled into the binary, so
//! adding a server is adding a file (its `priority` orders it among the others). Each is
//! also written as JSON, which the binary reads at start-up: parsing the eight files' TOML
//! took ~11 M instructions, a quarter of a small log's whole run (docs/architecture.md,
//! "The scan", the start-up's bullets). A file that does not parse gets no JSON: the
//! binary then reads its TOML and reports the error as for a user's grammar.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // Read at run time, not with `env!`: a build script compiled in one checkout and
    // run for another (a copied target directory) would embed the first one's grammars.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR set by cargo");
    let dir = Path::new(&manifest).join("grammars");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR set by cargo");
    let mut out = String::from(
        "/// Built-in grammars as (file stem, TOML text, the same as JSON or \"\" where the TOML\n\
         /// does not parse), found by build.rs.\n\
         pub const BUILTIN: &[(&str, &str, &str)] = &[\n",
    );
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("grammar");
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let json = toml::from_str::<toml::Table>(&text)
            .ok()
            .and_then(|table| serde_json::to_string(&table).ok())
            .unwrap_or_default();
        let json_path = Path::new(&out_dir).join(format!("{stem}.json"));
        std::fs::write(&json_path, json)
            .unwrap_or_else(|e| panic!("writing {}: {e}", json_path.display()));
        let _ = writeln!(
            out,
            "    ({stem:?}, include_str!({:?}), include_str!({:?})),",
            f.display().to_string(),
            json_path.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = Path::new(&out_dir).join("builtin_grammars.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("writing {}: {e}", dest.display()));
}
