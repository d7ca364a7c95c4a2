//! The binary as a user runs it: exit codes, JSON contract, errors that name the file.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use predicates::prelude::*;

fn rankscope() -> Command {
    let mut c = Command::cargo_bin("rankscope").expect("binary built");
    c.env("NO_COLOR", "1");
    c
}

#[test]
fn diff_exit_codes_follow_the_documented_contract() {
    rankscope()
        .args(["diff", "samples/tp8-baseline", "samples/tp8-custom-ar"])
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("FAILED"))
        .stdout(predicate::str::contains(
            "enable_custom_allreduce  False -> True",
        ));
    rankscope()
        .args([
            "diff",
            "samples/tp8-baseline",
            "samples/tp8-custom-ar-fixed",
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("REGRESSED"))
        .stdout(predicate::str::contains("597 fewer KV tokens per rank"));
    rankscope()
        .args(["diff", "samples/tp8-baseline", "samples/tp8-baseline"])
        .assert()
        .code(0)
        .stdout(predicate::str::starts_with("SAME"));
}

#[test]
fn diff_json_carries_schema_version_and_canonical_names() {
    let out = rankscope()
        .args([
            "diff",
            "samples/tp8-baseline",
            "samples/tp8-custom-ar",
            "--json",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["schema_version"], 5);
    assert_eq!(v["status"], "failed");
    assert_eq!(v["first_divergence"]["phase"], "dist_init");
    assert_eq!(v["first_divergence"]["class"], "systematic");
    assert_eq!(v["config"]["changed"][0]["key"], "enable_custom_allreduce");
    assert_eq!(v["candidate_outcome"]["groups"][0]["kind"], "oom");
    assert_eq!(v["candidate_outcome"]["groups"][0]["phase"], "cuda_graph");
    assert_eq!(
        v["candidate_outcome"]["groups"][0]["requested_bytes"],
        serde_json::json!({"bytes": 20_971_520, "resolution_bytes": 10_486})
    );
    // Both runs by their identity: the directory's name, whatever path was typed.
    assert_eq!(v["baseline"]["name"], "tp8-baseline");
    assert_eq!(v["candidate"]["name"], "tp8-custom-ar");
    assert_eq!(v["candidate"]["paths"], "samples/tp8-custom-ar");
    // The snapshot notes the text prints, in the same words: both sides' eight snapshots
    // are named snapshot_rank0..7.pickle (matched by file name) and every one of them
    // records device 0 (samples/tp8-*/snapshot_rank*.pickle).
    let notes = v["snapshot_notes"].as_array().expect("snapshot notes");
    assert_eq!(notes.len(), 2);
    for (n, side) in notes.iter().zip(["baseline", "candidate"]) {
        let n = n.as_str().unwrap();
        assert!(
            n.starts_with(&format!(
                "{side} snapshots matched by file name (all 8); all on device 0"
            )),
            "{n}"
        );
    }
    let text = rankscope()
        .args([
            "diff",
            "samples/tp8-baseline",
            "samples/tp8-custom-ar",
            "--width",
            "400",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8(text.stdout).unwrap();
    for n in notes {
        assert!(text.contains(n.as_str().unwrap()), "{n} not in\n{text}");
    }
}

#[test]
fn events_json_and_ndjson_agree() {
    let out = rankscope()
        .args(["events", "samples/tp8-baseline/server.log", "--json"])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["schema_version"], 5);
    let events = v["events"].as_array().expect("events array");
    // server.log: 1 server_args + 8 ranks × 10 start-up lines + 1 ready = 82 lines, minus
    // the 8 `Capture cuda graph bs` lines that are not events.
    assert_eq!(events.len(), 74);
    let first_end = events
        .iter()
        .find(|e| e["kind"] == "dist_init_end")
        .expect("dist_init_end");
    assert_eq!(first_end["rank"], "TP1");
    assert_eq!(first_end["fields"]["mem_usage_bytes"]["bytes"], 644_245_094);
    assert_eq!(first_end["line"], 10);

    let nd = rankscope()
        .args(["events", "samples/tp8-baseline/server.log", "--ndjson"])
        .output()
        .expect("runs");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&nd.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.iter().filter(|l| l["type"] == "event").count(), 74);
    assert_eq!(
        lines.last().map(|l| l["type"].clone()),
        Some("summary".into())
    );
}

#[test]
fn summary_reads_stdin_and_reports_ranks() {
    let log = std::fs::read("samples/tp8-custom-ar/server.log").expect("sample");
    rankscope()
        .args(["summary", "-", "--ranks"])
        .write_stdin(log)
        .assert()
        .code(0)
        .stdout(predicate::str::starts_with("FAILED"))
        .stdout(predicate::str::contains("8/8 ranks: oom in cuda_graph"));
}

#[test]
fn missing_and_binary_inputs_are_clear_errors() {
    rankscope()
        .args(["summary", "no/such/run"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no/such/run: no such file or directory",
        ));
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("core.log");
    std::fs::write(&bin, b"\x7fELF\x02\x01\x01\x00\x00\x00garbage").expect("write");
    rankscope()
        .arg("summary")
        .arg(&bin)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "core.log: binary data (NUL byte at offset 7)",
        ));
    let empty = tempfile::tempdir().expect("tempdir");
    rankscope()
        .arg("summary")
        .arg(empty.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no log files in this directory"));
}

#[test]
fn grammar_samples_all_pass() {
    rankscope()
        .args(["grammars", "check"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(" 0 failed"));
}

#[test]
fn mem_reads_a_real_snapshot_and_diffs_by_site() {
    rankscope()
        .args(["mem", "samples/tp8-custom-ar/snapshot_rank0.pickle"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("OOM  asked 20.00 MiB"))
        .stdout(predicate::str::contains(
            "init_custom_ar (model_runner.py:85-87)         24.03 MiB   40.00 MiB          3",
        ));
    rankscope()
        .args([
            "mem",
            "diff",
            "samples/tp8-baseline/snapshot_rank0.pickle",
            "samples/tp8-custom-ar/snapshot_rank0.pickle",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("2 x 20.00 MiB = 40.00 MiB"));
    rankscope()
        .args(["diff", "samples/tp8-baseline", "samples/tp8-custom-ar"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "init_custom_ar (model_runner.py:85-87) on 8/8 ranks",
        ))
        .stdout(predicate::str::contains(
            "the log's 10.24 MiB resolution: ~0",
        ));
}

#[test]
fn a_corrupt_snapshot_is_an_error_with_its_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("snapshot_rank0.pickle");
    let real = std::fs::read("samples/tp8-baseline/snapshot_rank0.pickle").expect("sample");
    std::fs::write(&p, &real[..1000]).expect("write");
    rankscope()
        .arg("mem")
        .arg(&p)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("snapshot_rank0.pickle"))
        .stderr(predicate::str::contains(
            "at byte 987 exceeds the 12 bytes left",
        ));
}

#[test]
fn mem_sites_can_be_per_line_or_skip_more_frames() {
    // rank 0's init_custom_ar blocks: 8,421,376 B on line 85, 8,388,608 B on 86 and 87.
    rankscope()
        .args([
            "mem",
            "samples/tp8-custom-ar/snapshot_rank0.pickle",
            "--by-line",
            "--top",
            "20",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "init_custom_ar (model_runner.py:85)             8.03 MiB",
        ))
        .stdout(predicate::str::contains(
            "init_custom_ar (model_runner.py:86)             8.00 MiB",
        ));
    // Skipping the server's own file moves every site to its caller.
    rankscope()
        .args([
            "mem",
            "samples/tp8-custom-ar/snapshot_rank0.pickle",
            "--skip-frames",
            "model_runner.py",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("init_custom_ar").not());
}

#[test]
fn compressed_logs_read_like_plain_ones() {
    use std::io::Write;
    let plain = std::fs::read("samples/tp8-custom-ar/server.log").expect("sample");
    let dir = tempfile::tempdir().expect("tempdir");
    let gz = dir.path().join("server.log.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&plain).expect("gzip");
    std::fs::write(&gz, enc.finish().expect("gzip")).expect("write");
    // Compression is known by its magic bytes, not its name.
    let zst = dir.path().join("renamed.log");
    std::fs::write(&zst, zstd::encode_all(&plain[..], 3).expect("zstd")).expect("write");
    let events = |p: &std::path::Path| -> Vec<serde_json::Value> {
        let out = rankscope()
            .arg("events")
            .arg(p)
            .arg("--json")
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        v["events"].as_array().cloned().unwrap_or_default()
    };
    let (a, b) = (events(&gz), events(&zst));
    // server.log of the custom-AR run: server_args, then per rank dist_init begin and
    // end, custom allreduce, weight load begin and end, budget, KV alloc, pool end, graph
    // begin, the scheduler's exception and its OOM: 1 + 8 × 11 = 89 events.
    let direct = events(std::path::Path::new("samples/tp8-custom-ar/server.log"));
    assert_eq!(direct.len(), 89);
    assert_eq!((a.len(), b.len()), (direct.len(), direct.len()));
    assert_eq!(a.iter().filter(|e| e["kind"] == "oom").count(), 8);
    assert_eq!(b.iter().filter(|e| e["kind"] == "oom").count(), 8);
}

#[test]
fn a_compressed_file_in_a_run_directory_is_found_by_its_first_bytes() {
    // A directory's listing does not open its files; the compression of each is read
    // from its first bytes when it is scanned, so a zstd file named `.log` still reads.
    let plain = std::fs::read("samples/tp8-custom-ar/server.log").expect("sample");
    let dir = tempfile::tempdir().expect("tempdir");
    let zst = zstd::encode_all(&plain[..], 3).expect("zstd");
    std::fs::write(dir.path().join("server.log"), &zst).expect("write");
    let out = rankscope()
        .arg("events")
        .arg(dir.path())
        .arg("--json")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let events = v["events"].as_array().cloned().unwrap_or_default();
    // The same 89 events as the plain file (counted in the test above), 8 of them OOMs.
    assert_eq!(events.len(), 89);
    assert_eq!(events.iter().filter(|e| e["kind"] == "oom").count(), 8);
}

#[test]
fn mem_json_carries_the_hand_checked_site_and_oom() {
    let out = rankscope()
        .args([
            "mem",
            "samples/tp8-custom-ar/snapshot_rank0.pickle",
            "--json",
        ])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["schema_version"], 5);
    let s = &v["snapshots"][0]["summary"];
    assert_eq!(s["ooms"][0]["requested_bytes"]["bytes"], 20_971_520);
    let site = s["sites"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|x| x["site"] == "init_custom_ar (model_runner.py)")
        })
        .expect("init_custom_ar site");
    // Exact counts from the snapshot: resolution 0 (schema 5).
    assert_eq!(
        site["allocated_bytes"],
        serde_json::json!({"bytes": 25_198_592, "resolution_bytes": 0})
    );
    assert_eq!(site["reserved_bytes"]["bytes"], 41_943_040);
    assert_eq!(site["blocks"], 3);
}

/// clap_mangen names a page per subcommand in SEE ALSO-style references
/// (`rankscope-diff(1)`): each one named in any page must be a page `rankscope man` writes.
#[test]
fn every_man_page_reference_is_a_page_rankscope_writes() {
    let man = |page: &str| -> String {
        // `rankscope man` alone writes the top page.
        let args: Vec<&str> = std::iter::once("man")
            .chain((page != "rankscope").then_some(page))
            .collect();
        let out = rankscope()
            .args(args)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8_lossy(&out).replace("\\-", "-")
    };
    let listed = rankscope()
        .args(["man", "--list"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let listed: Vec<String> = String::from_utf8_lossy(&listed)
        .lines()
        .map(str::to_string)
        .collect();
    // Its 12 visible subcommands (watch, issue 25, and report, issue 30, joined the 10),
    // mem diff, grammars list, check and show.
    assert_eq!(listed.len(), 16, "{listed:?}");
    let names: Vec<String> = std::iter::once("rankscope".to_string())
        .chain(listed.iter().map(|l| format!("rankscope-{l}")))
        .collect();
    let mut referenced = 0;
    for (page, name) in std::iter::once("rankscope")
        .chain(listed.iter().map(String::as_str))
        .zip(&names)
    {
        let roff = man(page);
        assert!(roff.contains(&format!(".TH {name} 1")), "{roff}");
        for (at, _) in roff.match_indices("(1)") {
            let head = &roff[..at];
            let start = head.rfind(|c: char| c.is_whitespace()).map_or(0, |i| i + 1);
            let referenced_name = &head[start..];
            if referenced_name.starts_with("rankscope") {
                referenced += 1;
                assert!(
                    names.iter().any(|n| n == referenced_name),
                    "{referenced_name} has no page"
                );
            }
        }
    }
    // Each of the 15 subcommand pages is named on its parent's page (12 on rankscope's,
    // 1 on mem's, 2 on grammars'); the `man` command's help names more.
    assert!(referenced >= 15, "{referenced}");
    rankscope()
        .args(["man", "no-such-page"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("grammars-check"));
}

/// fish completes `rankscope schema ` with the six documents of docs/schema/ (summary,
/// events, event, diff, mem, mem-diff), which clap_complete's fish output leaves out.
#[test]
fn fish_completes_the_schema_names() {
    let out = rankscope()
        .args(["completions", "fish"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    for name in ["summary", "events", "event", "diff", "mem", "mem-diff"] {
        let line = format!("__fish_rankscope_using_subcommand schema\" -f -a \"{name}\"");
        assert!(text.contains(&line), "no completion for schema {name}");
    }
    assert!(text.contains("__fish_rankscope_using_subcommand man\" -f -a \"mem-diff\""));
}

/// Every line of `out` fits `width` columns, but for single words longer than a line (a
/// URL), which are never cut.
fn fits(out: &str, width: usize) {
    for l in out.lines() {
        let cols = l.chars().count();
        assert!(
            cols <= width || !l.trim().contains(' '),
            "{cols} columns at --width {width}: {l}"
        );
    }
}

#[test]
fn narrow_terminals_get_one_wrapped_line_per_row_instead_of_tables_past_the_edge() {
    let run = |args: &[&str]| {
        let out = rankscope().args(args).output().expect("runs");
        String::from_utf8(out.stdout).unwrap()
    };
    // diff: the tp8 pair's figure table is 78 columns; at 60 each figure is a line. The
    // figures are those of the table at 80 (0.60 → 0.64 GiB at dist_init on all 8 ranks,
    // 0.04 GiB = 40.96 MiB).
    let d = run(&[
        "diff",
        "samples/tp8-baseline",
        "samples/tp8-custom-ar",
        "--width",
        "60",
    ]);
    fits(&d, 60);
    assert!(
        d.contains("dist_init mem usage: 0.60 GiB -> 0.64 GiB, +40.96 MiB\n  (8/8 systematic)"),
        "{d}"
    );
    assert!(
        d.contains("kv_cache tokens: 91,141 -> 91,141 (no rank moved)"),
        "{d}"
    );
    let wide = run(&[
        "diff",
        "samples/tp8-baseline",
        "samples/tp8-custom-ar",
        "--width",
        "80",
    ]);
    assert!(wide.contains(
        "dist_init    mem usage       0.60 GiB   0.64 GiB   +40.96 MiB   8/8 systematic"
    ));
    // summary --ranks: the rank table is 80 columns.
    let s = run(&[
        "summary",
        "samples/tp8-custom-ar",
        "--ranks",
        "--width",
        "60",
    ]);
    fits(&s, 60);
    assert!(
        s.contains("TP0: cuda_graph, failed oom; init mem 0.64 GiB, weights"),
        "{s}"
    );
    // mem: pool, stream and site rows.
    let m = run(&[
        "mem",
        "samples/tp8-custom-ar/snapshot_rank0.pickle",
        "--width",
        "60",
    ]);
    fits(&m, 60);
    assert!(
        m.contains("  stream s1: reserved 302.00 MiB, allocated 280.00 MiB"),
        "{m}"
    );
    assert!(
        m.contains("kv_cache (model_runner.py:130-131): 5.96 GiB, 5.96 GiB,"),
        "{m}"
    );
    // mem diff: the site tables (80 columns); capture_graphs 600 -> 560 MiB allocated and
    // 40 MiB less reserved, as the 80-column table gives it.
    let md = run(&[
        "mem",
        "diff",
        "samples/tp8-baseline/snapshot_rank0.pickle",
        "samples/tp8-custom-ar/snapshot_rank0.pickle",
        "--width",
        "60",
    ]);
    fits(&md, 60);
    assert!(
        md.contains("    allocated 600.00 MiB -> 560.00 MiB, reserved -40.00 MiB"),
        "{md}"
    );
}

#[test]
fn the_ndjson_run_message_carries_the_parsed_configuration_of_every_server() {
    let run_message = |sample: &str| {
        let out = rankscope()
            .args(["events", sample, "--ndjson"])
            .output()
            .expect("runs");
        let first = String::from_utf8(out.stdout).unwrap();
        let line = first.lines().next().expect("a run message").to_string();
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(v["type"], "run");
        v["data"].clone()
    };
    let setting = |data: &serde_json::Value, key: &str| {
        let settings = data["config"]["settings"].as_array().expect("settings");
        settings
            .iter()
            .find(|s| s["key"] == key)
            .map(|s| s["value"].clone())
    };
    // TGI's Rust Debug `Args { model_id: "/models/heron-13b", revision: None, sharded:
    // Some(true), num_shard: Some(2), … cuda_memory_fraction: 0.6 … }` (launcher.log line 1).
    let tgi = run_message("samples/tgi-tp2-oom");
    assert_eq!(tgi["config"]["grammar"], "tgi");
    assert_eq!(
        setting(&tgi, "model_id"),
        Some(serde_json::json!("/models/heron-13b"))
    );
    assert_eq!(setting(&tgi, "revision"), Some(serde_json::Value::Null));
    assert_eq!(setting(&tgi, "num_shard"), Some(serde_json::json!(2)));
    assert_eq!(
        setting(&tgi, "cuda_memory_fraction"),
        Some(serde_json::json!(0.6))
    );
    // LMDeploy's `PytorchEngineConfig(dtype='auto', tp=1, session_len=8192, …)`.
    let lmdeploy = run_message("samples/lmdeploy-tp1-oom");
    assert_eq!(
        setting(&lmdeploy, "cache_max_entry_count"),
        Some(serde_json::json!(0.95))
    );
    // TensorRT-LLM's samples print no configuration line.
    let trt = run_message("samples/trtllm-tp2");
    assert_eq!(trt["config"], serde_json::Value::Null);
    assert_eq!(trt["config_error"], serde_json::Value::Null);
}

/// The identity block, checked against the logs: samples/vllm-tp2/server.log line 1 is
/// `(APIServer pid=4100) INFO 03-14 10:02:11 … vLLM API server version 0.11.1`; its ready
/// line (28, `Application startup complete.`) has no stamp and takes line 25's 10:03:46.
/// trtllm-tp2 prints no configuration line and no version, but is TensorRT-LLM's.
#[test]
fn every_document_names_its_run_by_one_identity() {
    let summary = |path: &str| -> serde_json::Value {
        let out = rankscope()
            .args(["summary", path, "--json"])
            .output()
            .expect("runs");
        serde_json::from_slice(&out.stdout).expect("valid JSON")
    };
    let id = &summary("samples/vllm-tp2")["identity"];
    assert_eq!(id["name"], "vllm-tp2");
    assert_eq!(id["server"], "vllm");
    assert_eq!(id["version"], "0.11.1");
    assert_eq!(id["first_line"]["at"], "2026-03-14T10:02:11.000000-00:00");
    assert_eq!(id["ready_at"]["at"], "2026-03-14T10:03:46.000000-00:00");
    assert_eq!(id["to_ready_s"], 95.0);
    // The same name, whatever path is typed.
    let absolute = std::fs::canonicalize("samples/vllm-tp2").unwrap();
    for typed in [
        "samples/vllm-tp2/",
        "./samples/vllm-tp2",
        absolute.to_str().unwrap(),
    ] {
        let other = summary(typed);
        assert_eq!(other["identity"]["name"], "vllm-tp2", "{typed}");
        assert_eq!(other["identity"]["hash"], id["hash"], "{typed}");
    }
    let trt = &summary("samples/trtllm-tp2")["identity"];
    assert_eq!(
        (&trt["server"], &trt["version"]),
        (&"trtllm".into(), &serde_json::Value::Null)
    );
    // The vLLM run record's configuration carries the version too, though its first
    // configuration line (`non-default args: {…}`) names none.
    let nd = rankscope()
        .args(["events", "samples/vllm-tp2", "--ndjson"])
        .output()
        .expect("runs");
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&nd.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["data"]["config"]["version"], "0.11.1");
}

/// `events --ndjson --attempt all` of `path`, one JSON value a line.
fn every_start_up(path: &str) -> Vec<serde_json::Value> {
    let nd = rankscope()
        .args(["events", path, "--ndjson", "--attempt", "all"])
        .output()
        .expect("runs");
    String::from_utf8_lossy(&nd.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `--attempt all`: a server restarted after tp8-custom-ar's OOM (its console, then
/// tp8-baseline's) is two start-ups, each with its own identity on its lines.
#[test]
fn attempt_all_writes_every_start_up_with_its_identity() {
    let dir = tempfile::tempdir().unwrap();
    let log = [
        std::fs::read("samples/tp8-custom-ar/server.log").unwrap(),
        std::fs::read("samples/tp8-baseline/server.log").unwrap(),
    ]
    .concat();
    std::fs::write(dir.path().join("server.log"), log).unwrap();
    let path = dir.path().to_str().unwrap();
    let lines = every_start_up(path);
    let runs: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "run").collect();
    assert_eq!(runs.len(), 2);
    // tp8-custom-ar's first line is 09:18:30 and it never gets ready; tp8-baseline's is
    // 09:18:09, ready at 09:18:19 (server.log line 82).
    assert_eq!(runs[0]["run"]["attempt"], 1);
    assert_eq!(
        runs[0]["run"]["first_line"]["at"],
        "2026-11-29T09:18:30.000000-00:00"
    );
    assert!(runs[0]["run"]["to_ready_s"].is_null());
    assert_eq!(runs[1]["run"]["attempt"], 2);
    assert_eq!(runs[1]["run"]["attempts"], 2);
    assert_eq!(runs[1]["run"]["to_ready_s"], 10.0);
    let summaries: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "summary").collect();
    assert_eq!(summaries[0]["data"]["root"], "TP2");
    assert_eq!(summaries[1]["data"]["ready"], true);
    // Elsewhere, `all` is refused with what it goes with.
    let out = rankscope()
        .args(["summary", path, "--attempt", "all"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--ndjson"));
}

/// `--attempt all` on a crash loop: 400 start-ups appended to one log, each an OOM in
/// weight_load one second after the one before. Each is written with its own number and
/// first line. (The log was read and built once per start-up: 300 took 4.2 s, 3,000 did
/// not end in two minutes; it is read once now.)
#[test]
fn attempt_all_reads_a_crash_loop_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = String::new();
    for a in 0..400 {
        let t = format!("2026-11-29 09:{:02}:{:02}", a / 60, a % 60);
        log.push_str(&format!(
            "[{t}] server_args=ServerArgs(model_path='m', tp_size=2, pp_size=1)\n\
             [{t} TP0] Init torch distributed begin.\n\
             [{t} TP1] Init torch distributed begin.\n\
             [{t} TP0] Load weight begin. avail mem=14.00 GB\n\
             [{t} TP0] Scheduler hit an exception: Traceback (most recent call last):\n\
             \x20 File \"/x/scheduler.py\", line 10, in run_scheduler_process\n\
             torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        ));
    }
    std::fs::write(dir.path().join("server.log"), log).unwrap();
    let path = dir.path().to_str().unwrap();
    let lines = every_start_up(path);
    let runs: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "run").collect();
    assert_eq!(runs.len(), 400);
    for (k, run) in runs.iter().enumerate() {
        assert_eq!(run["run"]["attempt"], k + 1);
        assert_eq!(run["run"]["attempts"], 400);
        let at = format!("2026-11-29T09:{:02}:{:02}.000000-00:00", k / 60, k % 60);
        assert_eq!(run["run"]["first_line"]["at"], at.as_str());
    }
    let summaries: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "summary").collect();
    assert_eq!(summaries.len(), 400);
    assert!(summaries.iter().all(|s| s["data"]["root"] == "TP0"));
}
