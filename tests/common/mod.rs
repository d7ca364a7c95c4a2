//! Helpers shared by the integration tests.

/// Writes on the process's real stderr, which the test harness does not capture (it does
/// capture `eprintln!` of passing tests): for a score that must show in CI's log. A test
/// whose input is absent is `#[ignore = "needs …"]`, never a silent pass.
#[macro_export]
macro_rules! rankscope_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::path::Path;

use rankscope::grammar::GrammarSet;
use rankscope::model::Run;
use rankscope::session::{LoadOptions, Session};

/// A run read with the built-in grammars, as `rankscope summary PATH` reads it.
#[allow(dead_code)] // each test binary uses some of these helpers
pub fn load(path: impl AsRef<Path>) -> Run {
    let gs = GrammarSet::builtin().expect("built-in grammars compile");
    Session::open(
        &gs,
        &[path.as_ref().to_path_buf()],
        &LoadOptions::default(),
        &|_, _| {},
    )
    .expect("run loads")
    .run
}

/// A run made of one log file `name` holding `text`, written for the test.
#[allow(dead_code)]
pub fn run_of(name: &str, text: &str) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join(name);
    std::fs::write(&p, text).expect("write");
    load(&p)
}

/// `rankscope --grammar GRAMMAR ARGS…` run from a made-up server's fixture directory `dir`
/// (so sources are named `failing/…` as its EXPECTED.md names them), 120 columns, no
/// colour: the exit code and stdout.
#[allow(dead_code)]
pub fn fixture_run(dir: &str, grammar: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .expect("the rankscope binary is built")
        .current_dir(dir)
        .args(["--grammar", grammar, "--color", "never", "--width", "120"])
        .args(args)
        .output()
        .expect("rankscope runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `fixture_run` of a `--json` command: its document (exit code 0 or 1, else the test fails
/// showing the output).
#[allow(dead_code)]
pub fn fixture_json(dir: &str, grammar: &str, args: &[&str]) -> serde_json::Value {
    let (code, out) = fixture_run(dir, grammar, args);
    assert!(matches!(code, Some(0 | 1)), "{out}");
    serde_json::from_str(&out).expect("the output is JSON")
}

/// A temporary directory inside the fixture's `dir` (so an edited grammar or run keeps the
/// fixture's relative paths), and its name there.
#[allow(dead_code)]
pub fn temp_in(dir: &str) -> (tempfile::TempDir, String) {
    let temp = tempfile::tempdir_in(dir).expect("tempdir in the fixture");
    let name = temp
        .path()
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a UTF-8 name")
        .to_string();
    (temp, name)
}

/// The rank entry `name` of a `summary --json` document.
#[allow(dead_code)]
pub fn rank_entry<'a>(summary: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    summary["run"]["ranks"]
        .as_array()
        .expect("run.ranks is an array")
        .iter()
        .find(|r| r["rank"] == name)
        .unwrap_or_else(|| panic!("no rank {name}"))
}

/// The text with each run of whitespace (a wrapped row's break and indent) as one space.
#[allow(dead_code)]
pub fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `rankscope grammars check` of fixture `dir`'s grammar `file` with `from` replaced by
/// `to` (written to a temporary file): the exit code and what it printed, stdout then
/// stderr, each flattened.
#[allow(dead_code)]
pub fn check_edited(dir: &str, file: &str, from: &str, to: &str) -> (Option<i32>, String) {
    let grammar = std::fs::read_to_string(format!("{dir}/{file}")).expect("the grammar");
    assert!(grammar.contains(from), "{file} holds {from:?}");
    let temp = tempfile::tempdir().expect("a temporary directory");
    let path = temp.path().join("edited.toml");
    std::fs::write(&path, grammar.replace(from, to)).expect("the edited grammar");
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .expect("the binary")
        .args(["grammars", "check"])
        .arg(&path)
        .output()
        .expect("it runs");
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), flat(&said))
}

/// `f` of each item, in the items' order, on as many threads as the machine has cores (at
/// most 4): a test that runs the binary once per run spent a minute of CI doing so one at
/// a time.
#[allow(dead_code)]
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let chunk = items.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| s.spawn(|| part.iter().map(&f).collect::<Vec<R>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a worker of par_map panicked"))
            .collect()
    })
}
