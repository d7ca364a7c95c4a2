//! A configuration printed inside a JSON string (issue #28, trial 5's M2): a made-up
//! JSON-lines server, `cinderbox` (our own values), prints its options in the `msg` string
//! as a Rust `{:?}` struct, a Python dict and an argparse `Namespace(…)`, their quotes
//! escaped. `[[config]]` `escaped = "json"` reads all three; without it `grammars check`
//! fails the `server_args` samples, naming the rule, the byte and the fix.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;

const GRAMMAR: &str = r#"
id = "cinderbox"
name = "cinderbox"
description = "cinderbox (made up): JSON-lines records, its configuration inside the msg string"
describes = "server"

[[prefix]]
id = "record"
regex = '''^\{"t":"(?P<stamp>[^"]+)","rank":(?P<tp>\d+),"msg":"'''
stamp_format = "%Y-%m-%dT%H:%M:%S%.3fZ"
starts_with = ['{"t":']

[[suffix]]
id = "tail"
regex = '''"(?:,"\w+":(?:"[^"]*"|[^,"}]*))*\}$'''

[[config]]
marker = "args: "
syntax = "rust_debug"
escaped = "json"

[[config]]
marker = "overrides: "
syntax = "python_dict"
escaped = "json"

[[config]]
marker = "launch: "
syntax = "python_call"
escaped = "json"

[[event]]
kind = "server_args"
literals = ["args: CinderArgs {"]
regex = '''^args: CinderArgs \{'''

[[event]]
kind = "server_args"
literals = ["overrides: {"]
regex = '''^overrides: \{'''

[[event]]
kind = "server_args"
literals = ["launch: Namespace("]
regex = '''^launch: Namespace\('''

[[event]]
kind = "weight_load_begin"
phase = "weight_load"
edge = "begins"
literals = ["loading weights from "]
regex = '''^loading weights from (?P<path>[^"]+)'''

[[event]]
kind = "ready"
literals = ["serving on "]
regex = '''^serving on (?P<port>\d+)'''
units = { port = "int" }

[[event]]
kind = "error"
set = { failure = "exception" }
literals = ["engine failed"]
regex = '''^engine failed'''

[[sample]]
line = '''{"t":"2026-12-02T08:00:00.000Z","rank":0,"msg":"args: CinderArgs { model: \"/m/cinder-7b\", dtype: \"bf16\", max_batch: 32, attn: \"flash\" }"}'''
kind = "server_args"
rank = "TP0"

[[sample]]
line = '''{"t":"2026-12-02T08:00:00.010Z","rank":0,"msg":"overrides: {'tokenizer': 'C:\\\\tok\\\\v2', 'note': 'say \"hi\"', 'max_len': 4096}"}'''
kind = "server_args"

[[sample]]
line = '''{"t":"2026-12-02T08:00:00.020Z","rank":0,"msg":"launch: Namespace(chat_template=\"it's\", tp=2)"}'''
kind = "server_args"
"#;

const BASELINE: &str = r#"{"t":"2026-12-02T08:00:00.000Z","rank":0,"msg":"args: CinderArgs { model: \"/m/cinder-7b\", dtype: \"bf16\", max_batch: 32, attn: \"flash\" }"}
{"t":"2026-12-02T08:00:01.000Z","rank":0,"msg":"loading weights from /m/cinder-7b"}
{"t":"2026-12-02T08:00:05.000Z","rank":0,"msg":"serving on 8000"}
"#;

const FAILING: &str = r#"{"t":"2026-12-02T08:10:00.000Z","rank":0,"msg":"args: CinderArgs { model: \"/m/cinder-7b\", dtype: \"fp8\", max_batch: 32, attn: \"paged_v2\" }"}
{"t":"2026-12-02T08:10:01.000Z","rank":0,"msg":"loading weights from /m/cinder-7b"}
{"t":"2026-12-02T08:10:03.000Z","rank":0,"msg":"engine failed","err":"kernel paged_v2 not built for sm_80"}
"#;

/// The grammar (as `grammar.toml`, edited by `edit`) and the two runs in a temporary
/// directory.
fn setup(edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grammar.toml"), edit(GRAMMAR)).unwrap();
    for (run, text) in [("baseline", BASELINE), ("failing", FAILING)] {
        std::fs::create_dir(dir.path().join(run)).unwrap();
        std::fs::write(dir.path().join(run).join("rank0.log"), text).unwrap();
    }
    dir
}

fn rankscope(dir: &tempfile::TempDir, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(dir.path())
        .args(["--color", "never", "--width", "120"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn escaped_configurations_of_three_syntaxes_read_in_their_samples() {
    let dir = setup(str::to_string);
    let (code, out) = rankscope(&dir, &["grammars", "check", "grammar.toml"]);
    // Sample 1: model, dtype, max_batch, attn; sample 2: tokenizer, note, max_len;
    // sample 3: chat_template, tp.
    assert_eq!(
        out,
        "3 samples checked, 0 failed; configurations read: sample 1, 4 settings; \
         sample 2, 3 settings; sample 3, 2 settings\n"
    );
    assert_eq!(code, Some(0));
}

#[test]
fn without_escaped_json_the_check_names_the_rule_the_byte_and_the_fix() {
    let dir = setup(|g| g.replace("escaped = \"json\"\n", ""));
    let (code, out) = rankscope(&dir, &["grammars", "check", "grammar.toml"]);
    assert_eq!(code, Some(1), "{out}");
    // Sample 1: `{"t":"…Z","rank":0,"msg":"` is 48 bytes, `args: ` 6, `CinderArgs {
    // model: ` 20: the first `\"` is byte 74.
    assert!(
        out.contains(
            "sample 1 (\"{\\\"t\\\":\\\"2026-12-02T08:00:00.000Z\\\",\\\"rank\\\":0,\\\"msg\\\":\\\"args: Cinder…\"): \
             configuration not read by the `[[config]]` with marker `args: `, syntax `rust_debug`: \
             at byte 74: expected a Rust Debug struct, found \"\\\\\\\"/m/cinder-7b\\\\\\\", dt\" where a \
             value was expected; the configuration is inside a JSON string (its quotes print as \
             `\\\"`): add `escaped = \"json\"` to this `[[config]]`"
        ),
        "{out}"
    );
    // Sample 3: 48 bytes, `launch: ` 8, `Namespace(` 10, `chat_template=` 14: byte 80.
    assert!(
        out.contains(
            "configuration not read by the `[[config]]` with marker `launch: `, syntax \
             `python_call`: at byte 80: expected a value, found '\\\\'; the configuration is \
             inside a JSON string"
        ),
        "{out}"
    );
    // Sample 2's Python strings hold no quote JSON escapes before its first setting ends,
    // so it reads (its values with their escapes left in): only 2 of 3 failed.
    assert!(
        out.ends_with("3 samples checked, 2 failed; configuration read: sample 2, 3 settings\n"),
        "{out}"
    );
}

#[test]
fn a_server_args_sample_without_its_marker_fails() {
    // Sample 3's `launch: ` is no marker of any loaded grammar once the rule says `start: `.
    let dir = setup(|g| g.replace("marker = \"launch: \"", "marker = \"start: \""));
    let (code, out) = rankscope(&dir, &["grammars", "check", "grammar.toml"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "no `[[config]]` marker is in the message (this grammar's: `args: ` (rust_debug), \
             `overrides: ` (python_dict), `start: ` (python_call))"
        ),
        "{out}"
    );
    assert!(
        out.ends_with(
            "3 samples checked, 1 failed; configurations read: sample 1, 4 settings; \
             sample 2, 3 settings\n"
        ),
        "{out}"
    );
}

#[test]
fn another_grammars_rule_that_reads_the_line_is_named() {
    // With its own marker gone, sample 1's `args: ` is the built-in vllm grammar's
    // marker (`args: `, python_call), which cannot read `CinderArgs {` at byte 64 (48
    // bytes of record, `args: ` 6, `CinderArgs` 10: the space before `{`).
    let dir = setup(|g| g.replace("marker = \"args: \"", "marker = \"opts: \""));
    let (code, out) = rankscope(&dir, &["grammars", "check", "grammar.toml"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "configuration not read by the `[[config]]` of grammar `vllm` (no marker of this \
             grammar is in the message; every grammar's rules are tried after the line's own) \
             with marker `args: `, syntax `python_call`: at byte 64: expected `(`, found ' '; \
             syntax `python_call` expects `Name(k=v, …)` right after the marker"
        ),
        "{out}"
    );
}

#[test]
fn an_unknown_escaping_is_a_grammar_error() {
    let dir = setup(|g| g.replacen("escaped = \"json\"", "escaped = \"yaml\"", 1));
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(dir.path())
        .args(["grammars", "check", "grammar.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("config 1: escaped `yaml` is not `json`"),
        "{err}"
    );
}

#[test]
fn diff_compares_the_unescaped_settings() {
    let dir = setup(str::to_string);
    let (code, out) = rankscope(
        &dir,
        &["--grammar", "grammar.toml", "diff", "baseline", "failing"],
    );
    assert_eq!(code, Some(1), "{out}");
    // The strings Rust printed, in Rust's syntax: dtype and attn changed, model and
    // max_batch did not.
    assert!(
        out.contains(
            "config    dtype  \"bf16\" -> \"fp8\"\n          attn  \"flash\" -> \"paged_v2\"\n"
        ),
        "{out}"
    );
    assert!(!out.contains("not readable"), "{out}");
}

#[test]
fn without_escaped_json_diffs_note_says_the_fix() {
    let dir = setup(|g| g.replace("escaped = \"json\"\n", ""));
    let (code, out) = rankscope(
        &dir,
        &["--grammar", "grammar.toml", "diff", "baseline", "failing"],
    );
    assert_eq!(code, Some(1), "{out}");
    // The message after the prefix: `args: ` 6 bytes, `CinderArgs { model: ` 20, so the
    // first `\"` is byte 26 of it.
    assert!(
        out.contains("baseline: configuration line not readable: at byte 26:"),
        "{out}"
    );
    let one_line = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        one_line.contains(
            "the configuration is inside a JSON string (its quotes print as `\\\"`): its \
             grammar's `[[config]]` reads it with `escaped = \"json\"`"
        ),
        "{out}"
    );
}
