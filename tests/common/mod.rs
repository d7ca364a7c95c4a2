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
