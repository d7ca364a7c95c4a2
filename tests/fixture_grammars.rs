//! Every made-up server's grammar under `tests/fixtures/` passes `grammars check` with all
//! its samples: a grammar that loads in its own tests may still fail (or, as
//! made-up-server-8's `%:z` stamp format once did, panic) in the check a user runs first.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

#[test]
fn every_fixture_grammar_passes_its_check() {
    let mut checked = 0;
    let mut grammars: Vec<std::path::PathBuf> = Vec::new();
    for entry in std::fs::read_dir("tests/fixtures").unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                grammars.push(path);
            }
        }
    }
    for grammar in grammars {
        let text = std::fs::read_to_string(&grammar).unwrap();
        // Counted from the file itself: one `[[sample]]` header per sample, and a
        // `[[frame_phase]]`'s own `sample = …` line (the check counts it too).
        let samples = text
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("[[sample]]") || l.starts_with("sample = "))
            .count();
        let out = Command::cargo_bin("rankscope")
            .unwrap()
            .args(["grammars", "check"])
            .arg(&grammar)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {stdout}{stderr}",
            grammar.display()
        );
        assert!(
            stdout.contains(&format!("{samples} samples checked, 0 failed")),
            "{}: {stdout}",
            grammar.display()
        );
        checked += 1;
    }
    // made-up-server (pagesrv), -2 (blocksrv), -3 … -11, -9's grammar-assignment.
    assert!(checked >= 12, "{checked} grammars checked");
}
