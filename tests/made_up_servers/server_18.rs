//! Trial 16 of issue 28 (`tidewater-serve`, `tests/fixtures/made-up-server-18/`, written
//! from docs/grammars.md alone): a copy of TensorRT-LLM's `trtllm-serve`, TP4 under
//! `mpirun --tag-output`, one file. Every line a rank wrote carries mpirun's tag
//! (`[1,2]<stderr>:`): a rank, no pid. In `failing/` (`kv_cache_config`'s
//! `free_gpu_memory_fraction` 0.85 → 0.95) TP2 prints the C++ runtime's OOM (line 44, no
//! sizes, `traceback = true`), then a tagged Python traceback (45–51) closed by torch's
//! `OutOfMemoryError: … Tried to allocate 1.50 GiB … 1.21 GiB is free … 0.42 GiB is
//! reserved by PyTorch but unallocated` (52); mpirun's untagged `MPI_ABORT` banner
//! follows (53–60), the other ranks are terminated (61–63) and mpirun reports the signal
//! (64). Values by `grep -n`.

use super::common;

const DIR: &str = "tests/fixtures/made-up-server-18";

use common::flat;

/// Q1, Q2: the tagged frames continue the C++ OOM's traceback (by the tag's rank), the
/// torch OOM that closes it is the failure (it says what it asked for) and takes its
/// frames' phase; the untagged banner after it is not TP2's.
#[test]
fn the_tagged_traceback_is_tp2s_and_torchs_oom_is_the_failure() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "failing"]);
    let tp2 = &common::rank_entry(&s, "TP2")["failure"];
    assert_eq!(tp2["kind"], "oom");
    assert_eq!(tp2["line"], 52);
    assert_eq!(tp2["phase"], "cuda_graph");
    assert_eq!(tp2["phase_from"], "frames");
    // 1.50 GiB asked for: 1.5 × 2^30.
    assert_eq!(tp2["fields"]["requested_bytes"]["bytes"], 1_610_612_736u64);
    assert!(
        tp2["traceback"]
            .as_str()
            .unwrap()
            .contains("cuda_graph_runner.py\", line 188, in capture"),
        "{}",
        tp2["traceback"]
    );
    // Lines 45–51 continue the traceback; the banner's 7 non-blank lines are noise.
    assert_eq!(s["run"]["lines"]["continuation"], 7);
    assert_eq!(s["run"]["lines"]["records"], 0);
    let launcher: Vec<(i64, &str)> = (s["run"]["launcher_failures"].as_array().unwrap())
        .iter()
        .map(|f| (f["line"].as_i64().unwrap(), f["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(launcher, [(54, "consequence"), (64, "failed")]);
}

/// M6, M7: with the sizes read, `diff` gives the deficit (1.50 GiB asked − 1.21 GiB free
/// = 0.29 GiB = 296.96 MiB) and prints the OOM's figures as the log printed them.
#[test]
fn diff_gives_the_deficit_and_the_printed_sizes() {
    let d = common::fixture_json(
        DIR,
        "grammar.toml",
        &["diff", "--json", "baseline", "failing"],
    );
    // round(1.21 × 2^30) = 1,299,227,607; 1,610,612,736 − that.
    assert_eq!(
        d["remedies"]["deficit"]["deficit_bytes"]["bytes"],
        311_385_129u64
    );
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    let text = flat(&text);
    assert!(text.contains("deficit: at least 296.96 MiB"), "{text}");
    assert!(
        text.contains("71.85 GiB allocated, 0.42 GiB reserved but unallocated"),
        "{text}"
    );
}

/// M5: a nested dict too long for the row shows the entries that changed, not its cut
/// beginning.
#[test]
fn diff_shows_the_changed_entry_of_a_nested_dict() {
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["diff", "baseline", "failing"]);
    assert!(
        flat(&text).contains(
            "config kv_cache_config {'free_gpu_memory_fraction': 0.85, …} -> \
             {'free_gpu_memory_fraction': 0.95, …} cause"
        ),
        "{text}"
    );
}

/// Q5: uvicorn's ready line has no stamp; it was printed after the last stamped event
/// before it (line 46 of baseline, `CUDA graph warm-up done` at 09:14:59), 59 s after the
/// run's first event (09:14:00).
#[test]
fn an_unstamped_ready_line_takes_the_stamp_before_it() {
    let s = common::fixture_json(DIR, "grammar.toml", &["summary", "--json", "baseline"]);
    assert_eq!(
        s["identity"]["ready_at"]["at"],
        "2026-12-02T09:14:59.000000-00:00"
    );
    assert_eq!(s["identity"]["to_ready_s"], 59.0);
    let (_, text) = common::fixture_run(DIR, "grammar.toml", &["summary", "baseline"]);
    assert!(
        text.contains("started 2026-12-02 09:14:00, last event 59 s later"),
        "{text}"
    );
}

/// `rankscope grammars check FILE` from the fixture's directory: exit code, stdout and
/// stderr.
fn check(file: &str) -> (Option<i32>, String) {
    let out = assert_cmd::Command::cargo_bin("rankscope")
        .unwrap()
        .current_dir(DIR)
        .args(["--color", "never", "grammars", "check", file])
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

/// The trial's grammar checks clean, and the check's messages say what to write.
#[test]
fn the_grammar_checks_and_a_mismatch_says_what_to_write() {
    let (code, out) = check("grammar.toml");
    assert_eq!(code, Some(0), "{out}");
    let (_temp, name) = common::temp_in(DIR);
    let mut grammar = std::fs::read_to_string(format!("{DIR}/grammar.toml")).unwrap();
    grammar.push_str(concat!(
        "\n[[sample]]\n",
        "line = \"[1,0]<stdout>:[TRT-LLM][INFO] NCCL version 2.21.5+cuda12.4, rank 0 of 4\"\n",
        "\n[[sample]]\n",
        "line = \"[1,3]<stdout>:[12/02/2026-09:14:04] [TRT-LLM] [I] NCCL communicator ready ",
        "(4 ranks) in 2.10s, 0.42 GiB used\"\n",
        "kind = \"dist_init_end\"\n",
        "fields = { mem_usage_bytes = 450000000 }\n",
    ));
    let file = format!("{name}/wrong.toml");
    std::fs::write(format!("{DIR}/{file}"), grammar).unwrap();
    let (code, out) = check(&file);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "expected no event, got `nccl_version` (read by grammar `nccl`, builtin:nccl): \
             write `kind = \"nccl_version\"` if the line is that event"
        ),
        "{out}"
    );
    // 0.42 GiB = round(0.42 × 2^30) = 450,971,566 bytes.
    assert!(
        out.contains(
            "read 450971566 (bytes), expected 450000000: \
             write `fields = { mem_usage_bytes = 450971566 }`"
        ),
        "{out}"
    );
}
