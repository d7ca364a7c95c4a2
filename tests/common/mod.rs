//! Helpers shared by the integration tests.

/// Says that a test skipped, on the process's real stderr: the test harness captures
/// `eprintln!` of passing tests, and a skip must be visible in CI's log.
#[macro_export]
macro_rules! rankscope_skip {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
