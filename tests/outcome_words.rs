//! Trial 11 of issue 28 (made-up server `rookline`): a server's own failure line that says
//! `timed out after 30s` is read by PyTorch's built-in wording as a stall (M2). The run
//! must still say who the terminated ranks followed, and `set = { outcome = "failed" }`
//! lets the grammar keep the line the rank's own failure. And a `pid` capture that holds
//! more than the number fails `grammars check` rather than merging every process (M7).
//! Our own three-rank log; every expectation is read off its six lines.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

const GRAMMAR: &str = r#"
id = "tidal"
name = "tidal"
describes = "server"

[[prefix]]
id = "line"
regex = '''^(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}) \[r(?P<tp>\d+)\] '''
stamp_format = "%Y-%m-%dT%H:%M:%S%.3f"
starts_with = ["20"]

[[event]]
kind = "dist_init_begin"
phase = "dist_init"
edge = "begins"
literals = ["joining group"]
regex = '''^joining group'''

[[event]]
kind = "error"
literals = ["collective init failed"]
regex = '''^collective init failed'''
set = { failure = "timeout" }

[[event]]
kind = "teardown"
literals = ["got SIGTERM"]
regex = '''^got SIGTERM'''
set = { outcome = "terminated" }
"#;

// r2 times out at line 4; r0 and r1 are killed a second later (lines 5, 6).
const LOG: &str = "2026-12-02T08:00:00.000 [r0] joining group
2026-12-02T08:00:00.010 [r1] joining group
2026-12-02T08:00:00.020 [r2] joining group
2026-12-02T08:00:05.000 [r2] collective init failed: handshake with r0 timed out after 5s
2026-12-02T08:00:06.000 [r0] got SIGTERM
2026-12-02T08:00:06.000 [r1] got SIGTERM
";

fn summary(grammar: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.toml"), grammar).unwrap();
    std::fs::create_dir(dir.path().join("run")).unwrap();
    std::fs::write(dir.path().join("run/w.log"), LOG).unwrap();
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(dir.path())
        .args(["--color", "never", "--grammar", "g.toml", "summary", "run"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn terminated_ranks_follow_a_stalled_root() {
    // `timed out after` is PyTorch's stall wording: r2 stalled, and the two killed ranks
    // are shown after it (they were not, with no failed rank in the run).
    let out = summary(GRAMMAR);
    assert!(
        out.contains("verdict: TP2 stalled in dist_init; 2 ranks were terminated"),
        "{out}"
    );
    assert!(
        out.contains("2/3 ranks: terminated (signal in dist_init), after TP2"),
        "{out}"
    );
}

#[test]
fn outcome_failed_keeps_the_line_the_ranks_own_failure() {
    let g = GRAMMAR.replace(
        "set = { failure = \"timeout\" }",
        "set = { failure = \"timeout\", outcome = \"failed\" }",
    );
    let out = summary(&g);
    assert!(
        out.contains("verdict: TP2 timed out in dist_init; 2 ranks were terminated"),
        "{out}"
    );
    assert!(out.contains("1/3 ranks: timeout in dist_init\n"), "{out}");
    assert!(!out.contains("stalled"), "{out}");
}

#[test]
fn a_pid_capture_that_is_no_number_fails_the_check() {
    // The tidal grammar with its prefix swapped for a framework's, whose `pid` capture
    // takes the host along with the number.
    let tidal_prefix = r#"regex = '''^(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}) \[r(?P<tp>\d+)\] '''
stamp_format = "%Y-%m-%dT%H:%M:%S%.3f"
starts_with = ["20"]"#;
    let framework_prefix = r#"regex = '''^\(ShardActor pid=(?P<pid>\d+, ip=[\d.]+)\) '''
starts_with = ["(ShardActor"]"#;
    assert!(GRAMMAR.contains(tidal_prefix));
    let g = GRAMMAR
        .replace("id = \"line\"", "id = \"framework\"")
        .replace(tidal_prefix, framework_prefix)
        + "\n[[sample]]\nline = \"(ShardActor pid=48209, ip=10.3.0.12) joining group\"\nkind = \"dist_init_begin\"\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.toml"), &g).unwrap();
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(dir.path())
        .args(["grammars", "check", "g.toml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "prefix `framework`: its `pid` capture matched `48209, ip=10.3.0.12`, which is no \
             process number"
        ),
        "{text}"
    );
    assert!(text.contains("1 samples checked, 1 failed"), "{text}");
}

/// Trial 12's M2: a configuration printed as a JSON object reads with `syntax = "json"`,
/// and `diff` writes its values as the server printed them (`"/m/x"`, `true`, `null`),
/// not in Python's spelling.
#[test]
fn a_json_configuration_is_diffed_in_json() {
    let g = GRAMMAR.replace(
        "[[event]]\nkind = \"dist_init_begin\"",
        "[[config]]\nmarker = \"config: \"\nsyntax = \"json\"\n\n[[event]]\nkind = \"server_args\"\nliterals = [\"config: {\"]\nregex = '''^config: \\{'''\n\n[[event]]\nkind = \"dist_init_begin\"",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("g.toml"), &g).unwrap();
    let runs = [
        (
            "a",
            r#"{"model": "/m/x", "dp": 4, "overlap": false, "draft": "eagle-1"}"#,
        ),
        (
            "b",
            r#"{"model": "/m/x-v2", "dp": 4, "overlap": true, "draft": null}"#,
        ),
    ];
    for (run, config) in runs {
        std::fs::create_dir(dir.path().join(run)).unwrap();
        let log = format!("2026-12-02T08:00:00.000 [r0] config: {config}\n{LOG}");
        std::fs::write(dir.path().join(run).join("w.log"), log).unwrap();
    }
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(dir.path())
        .args(["--color", "never", "--grammar", "g.toml", "diff", "a", "b"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "config    model  \"/m/x\" -> \"/m/x-v2\"\n          overlap  false -> true\n          draft  \"eagle-1\" -> null\n"
        ),
        "{text}"
    );
}
