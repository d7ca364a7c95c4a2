//! docs/grammars.md's recipe, end to end through the binary: a grammar for a made-up
//! server (`quill`) is written to a temporary directory, checked, and used by `summary`
//! and `diff`. Quill prints day-first stamps with milliseconds
//! (`30.11.2026 10:00:01.100`), the worker's rank at the END of the line
//! (`(worker=1)`), and a memory figure in `MB` meaning MiB, mapped by name onto the
//! `mem_usage` figure. Expected values are read off the log text below by hand.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

const GRAMMAR: &str = r#"
id = "quill"
name = "Quill"
description = "A made-up server: `30.11.2026 10:00:01.100 | quill | message (worker=1)`"

[[prefix]]
id = "quill"
regex = '''(?P<stamp>\d{2}\.\d{2}\.\d{4} \d{2}:\d{2}:\d{2}\.\d{3}) \| quill \| '''
stamp_format = "%d.%m.%Y %H:%M:%S%.3f"
starts_with = ["0", "1", "2", "3"]

[[suffix]]
id = "worker"
regex = ''' \(worker=(?P<tp>\d+)\)$'''

[[event]]
kind = "dist_init_end"
phase = "dist_init"
edge = "ends"
literals = ["comms up after"]
regex = '''comms up after (?P<secs>[\d.]+) s, (?P<used>[\d.]+) MB in use'''
units = { secs = "s", used = "MB" }
figures = { elapsed = "secs", mem_usage = "used" }

[[event]]
kind = "weight_load_end"
phase = "weight_load"
edge = "ends"
literals = ["weights placed:"]
regex = '''weights placed: (?P<resident>[\d.]+) GiB resident'''
units = { resident = "GiB" }
figures = { mem_usage = "resident" }

[[event]]
kind = "kv_cache_alloc"
phase = "kv_cache"
edge = "begins"
literals = ["cache carved:"]
regex = '''cache carved: (?P<slots>\d+) slots, (?P<size>[\d.]+) GiB'''
units = { slots = "int", size = "GiB" }
figures = { tokens = "slots", kv_size = "size" }

[[event]]
kind = "ready"
phase = "ready"
edge = "begins"
literals = ["accepting requests"]
regex = '''accepting requests on (?P<address>\S+)'''

[[event]]
kind = "error"
literals = ["cache carve failed"]
regex = '''cache carve failed: wanted (?P<wanted_bytes>[\d.]+) GiB, (?P<free_bytes>[\d.]+) GiB free'''
units = { wanted_bytes = "GiB", free_bytes = "GiB" }
set = { failure = "not_enough_memory", phase = "kv_cache" }

[[event]]
kind = "error"
literals = ["went away, stopping"]
regex = '''peer (?P<peer>\d+) went away, stopping'''
set = { outcome = "consequence" }

[[outcome]]
state = "consequence"
literals = ["went away, stopping"]
regex = '''peer (?P<peer>\d+) went away'''

[[sample]]
line = "30.11.2026 10:00:01.150 | quill | comms up after 1.10 s, 310 MB in use (worker=1)"
kind = "dist_init_end"
rank = "TP1"
time = "2026-11-30 10:00:01.150"
fields = { secs = 1.1, used = 325058560 }

[[sample]]
line = "30.11.2026 10:00:11.030 | quill | cache carve failed: wanted 30.00 GiB, 29.96 GiB free (worker=1)"
kind = "error"
rank = "TP1"
fields = { failure = "not_enough_memory" }
"#;

const HEALTHY: &str = "\
30.11.2026 10:00:00.000 | quill | launcher: starting 2 workers
30.11.2026 10:00:01.100 | quill | comms up after 1.05 s, 310 MB in use (worker=0)
30.11.2026 10:00:01.150 | quill | comms up after 1.10 s, 310 MB in use (worker=1)
30.11.2026 10:00:09.400 | quill | weights placed: 12.50 GiB resident (worker=0)
30.11.2026 10:00:09.900 | quill | weights placed: 12.50 GiB resident (worker=1)
30.11.2026 10:00:11.000 | quill | cache carved: 200000 slots, 30.00 GiB (worker=0)
30.11.2026 10:00:11.020 | quill | cache carved: 200000 slots, 30.00 GiB (worker=1)
30.11.2026 10:00:12.000 | quill | accepting requests on :7000
";

const FAILING: &str = "\
30.11.2026 11:00:00.000 | quill | launcher: starting 2 workers
30.11.2026 11:00:01.100 | quill | comms up after 1.05 s, 350 MB in use (worker=0)
30.11.2026 11:00:01.150 | quill | comms up after 1.10 s, 350 MB in use (worker=1)
30.11.2026 11:00:09.400 | quill | weights placed: 12.50 GiB resident (worker=0)
30.11.2026 11:00:09.900 | quill | weights placed: 12.50 GiB resident (worker=1)
30.11.2026 11:00:11.000 | quill | cache carved: 200000 slots, 30.00 GiB (worker=0)
30.11.2026 11:00:11.030 | quill | cache carve failed: wanted 30.00 GiB, 29.96 GiB free (worker=1)
30.11.2026 11:00:11.200 | quill | peer 1 went away, stopping (worker=0)
";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

/// The binary with a user grammar directory of its own (and no user config leaking in).
fn rankscope(grammar_dir: &Path) -> Command {
    let mut c = Command::cargo_bin("rankscope").expect("binary");
    c.env("RANKSCOPE_GRAMMAR_DIR", grammar_dir)
        .env("NO_COLOR", "1");
    c
}

fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out).expect("JSON output")
}

#[test]
fn a_made_up_server_from_one_grammar_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let empty = tmp.path().join("no-grammars");
    std::fs::create_dir(&empty).expect("dir");
    let grammar = write(tmp.path(), "quill.toml", GRAMMAR);
    let healthy = write(tmp.path(), "healthy.log", HEALTHY);
    let failing = write(tmp.path(), "failing.log", FAILING);

    // Without the grammar the log holds no start-up event: refused, exit 2.
    rankscope(&empty)
        .args(["summary", &healthy])
        .assert()
        .code(2);

    // Step 4: the samples pass.
    let out = rankscope(&empty)
        .args(["grammars", "check", &grammar])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&out).contains("2 samples checked, 0 failed"));

    // Step 5: summary with `--grammar`.
    let out = rankscope(&empty)
        .args(["--grammar", &grammar, "summary", &healthy, "--json"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let doc = json(&out);
    let run = &doc["run"];
    assert_eq!(run["ready"], true);
    // The run starts at its first start-up event (line 2, worker 0's `comms up`), read
    // day-first: 30 November 2026.
    assert_eq!(
        doc["identity"]["first_line"],
        serde_json::json!({"at": "2026-11-30T10:00:01.100000-00:00", "resolution_s": 0.001})
    );
    let ranks = run["ranks"].as_array().expect("ranks");
    let names: Vec<&str> = ranks.iter().filter_map(|r| r["rank"].as_str()).collect();
    assert_eq!(names, ["TP0", "TP1"], "ranks from the `(worker=N)` suffix");
    let tp1 = &ranks[1];
    let phase = |name: &str| {
        tp1["phases"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["phase"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let figure = |p: &str, f: &str| {
        phase(p)["figures"]
            .as_array()
            .and_then(|fs| fs.iter().find(|x| x["name"] == f))
            .cloned()
            .unwrap_or(Value::Null)
    };
    // Every figure is `{name, unit, value, resolution, source, line}` (schema 4).
    let value = |p: &str, f: &str| figure(p, f)["value"].as_f64();
    let bytes = |p: &str, f: &str| {
        let x = figure(p, f);
        assert_eq!(x["unit"], "bytes", "{x}");
        x["value"].as_f64()
    };
    // 310 MB is 310 MiB = 325,058,560 bytes, in the `mem_usage` figure it was mapped to;
    // one step of a whole MB is 1 MiB. It comes from line 3 (worker=1).
    assert_eq!(bytes("dist_init", "mem_usage"), Some(325_058_560.0));
    assert_eq!(figure("dist_init", "mem_usage")["resolution"], 1_048_576);
    assert_eq!(figure("dist_init", "mem_usage")["line"], 3);
    // `1.10 s` printed: dist_init has no begin line, so only the printed duration.
    assert_eq!(value("dist_init", "elapsed"), Some(1.1));
    assert_eq!(phase("dist_init")["duration_s"], Value::Null);
    // 12.50 GiB = 13,421,772,800 bytes; 200000 slots; 30.00 GiB = 32,212,254,720 bytes.
    assert_eq!(bytes("weight_load", "mem_usage"), Some(13_421_772_800.0));
    assert_eq!(value("kv_cache", "tokens"), Some(200_000.0));
    assert_eq!(bytes("kv_cache", "kv_size"), Some(32_212_254_720.0));
    // The stamps are read day-first with milliseconds: TP1's weights line is
    // `30.11.2026 10:00:09.900`.
    assert_eq!(
        phase("weight_load")["end"]["at"],
        "2026-11-30T10:00:09.900000-00:00"
    );

    // diff, with the grammar in the user grammar directory.
    let dir = tmp.path().join("grammars");
    std::fs::create_dir(&dir).expect("dir");
    write(&dir, "quill.toml", GRAMMAR);
    let out = rankscope(&dir)
        .args(["diff", &healthy, &failing, "--json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let d = json(&out);
    assert_eq!(d["status"], "failed");
    let div = &d["first_divergence"];
    assert_eq!(div["phase"], "dist_init");
    assert_eq!(div["name"], "mem_usage");
    let text = rankscope(&dir)
        .args(["diff", &healthy, &failing])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&text);
    // 350 MB - 310 MB = 40 MiB on both workers; TP1 ran short carving the cache.
    assert!(text.contains("+40.00 MiB on 2/2 ranks"), "{text}");
    assert!(
        text.contains("TP1 had not enough memory in kv_cache"),
        "{text}"
    );
}

#[test]
fn a_stamp_the_format_does_not_read_fails_the_check() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // Month-first by mistake: `30.11.2026` has no month 30.
    let wrong = GRAMMAR.replace("%d.%m.%Y", "%m.%d.%Y");
    let grammar = write(tmp.path(), "quill.toml", &wrong);
    let out = rankscope(tmp.path())
        .args(["grammars", "check", &grammar])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains("stamp `30.11.2026 10:00:01.150` does not parse with `%m.%d.%Y %H:%M:%S%.3f`"),
        "{out}"
    );
    assert!(out.contains("2 samples checked, 2 failed"), "{out}");
}

#[test]
fn a_figure_name_outside_the_vocabulary_is_an_error_naming_file_and_field() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad = GRAMMAR.replace("mem_usage = \"resident\"", "resident_mem = \"resident\"");
    let grammar = write(tmp.path(), "quill.toml", &bad);
    let out = rankscope(tmp.path())
        .args(["grammars", "check", &grammar])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("quill.toml"), "{err}");
    assert!(
        err.contains("event 2 (`weight_load_end`): figures.resident_mem: not a figure"),
        "{err}"
    );
}
