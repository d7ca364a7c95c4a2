//! docs/exports.md's fleet section, run as written: its SQL blocks, in order, with the
//! `duckdb` Python package, over `events --ndjson` and `summary --ndjson` of every sample.
//!
//! The test needs `python3` with `duckdb`, which `cargo test` alone does not install, so it
//! is ignored there (and shows as ignored, not as passed); `.ci/run` installs the package
//! into `target/duckdb-venv` and runs it with `--ignored`, where a missing package fails.
//! Locally: `python3 -m pip install duckdb`, then
//! `cargo test --test fleet_duckdb -- --ignored` (`RANKSCOPE_DUCKDB_PYTHON` names another
//! interpreter).

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command as Process;

use assert_cmd::Command;
use serde_json::{json, Value};

/// The SQL blocks of the `## Fleets` section of docs/exports.md.
fn fleet_sql() -> Vec<String> {
    let doc = std::fs::read_to_string("docs/exports.md").expect("docs/exports.md");
    let start = doc.find("## Fleets").expect("a Fleets section");
    let section = &doc[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let mut blocks = Vec::new();
    let mut rest = &section[..end];
    while let Some(open) = rest.find("```sql\n") {
        let body = &rest[open + 7..];
        let close = body.find("```").expect("closed sql block");
        blocks.push(body[..close].to_string());
        rest = &body[close..];
    }
    blocks
}

/// Runs every statement of `blocks` in one DuckDB connection inside `dir`; the rows of
/// each statement that returns rows, as JSON arrays.
fn run_duckdb(dir: &Path, blocks: &[String]) -> Vec<Vec<Value>> {
    let python = std::env::var("RANKSCOPE_DUCKDB_PYTHON").unwrap_or_else(|_| "python3".into());
    let sql = dir.join("fleet.sql");
    std::fs::write(&sql, blocks.join("\n")).expect("write SQL");
    let script = r#"
import json, sys
try:
    import duckdb
except ImportError as e:
    sys.exit("the duckdb Python package is missing (%s): .ci/run installs it; locally python3 -m pip install duckdb" % e)
con = duckdb.connect()
out = []
for stmt in open(sys.argv[1]).read().split(";"):
    if not stmt.strip():
        continue
    cur = con.execute(stmt)
    if cur.description is not None and stmt.strip().upper().startswith(("SELECT", "WITH")):
        out.append([list(r) for r in cur.fetchall()])
print(json.dumps(out, default=str))
"#;
    let output = Process::new(&python)
        .current_dir(dir)
        .arg("-c")
        .arg(script)
        .arg(&sql)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        output.status.success(),
        "{python} with duckdb failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON rows")
}

fn ndjson(args: &[&str]) -> Vec<u8> {
    let out = Command::cargo_bin("rankscope")
        .expect("binary")
        .args(args)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "rankscope {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
#[ignore = "needs python3 with the duckdb package; .ci/run installs it and runs this with --ignored"]
fn the_fleet_queries_of_the_docs_give_the_figures_of_the_samples() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fleet = dir.path().join("fleet");
    std::fs::create_dir(&fleet).expect("fleet dir");
    let mut samples = 0;
    for entry in std::fs::read_dir("samples").expect("samples/") {
        let path = entry.expect("entry").path();
        if !path.is_dir() {
            continue;
        }
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_string();
        let run = format!("samples/{name}");
        std::fs::write(
            fleet.join(format!("{name}.events.ndjson")),
            ndjson(&["events", &run, "--ndjson"]),
        )
        .expect("write");
        std::fs::write(
            fleet.join(format!("{name}.summary.ndjson")),
            ndjson(&["summary", &run, "--ndjson"]),
        )
        .expect("write");
        samples += 1;
    }
    assert_eq!(samples, 20, "samples/ holds 20 runs");

    let blocks = fleet_sql();
    assert_eq!(blocks.len(), 3, "views, durations, OOMs per setting");
    let results = run_duckdb(dir.path(), &blocks);
    assert_eq!(results.len(), 2, "two queries return rows");

    // Durations: (model, phase, ranks, p50_s, p90_s, max_s).
    let durations = &results[0];
    let row = |model: &str, phase: &str| {
        durations
            .iter()
            .find(|r| r[0] == model && r[1] == phase)
            .unwrap_or_else(|| panic!("no {model} {phase} in {durations:?}"))
            .clone()
    };
    // samples/vllm-v0-tp2 (`model='/models/mistral-7b'`): the driver and worker 7712 both
    // log `Starting to load model` at 14:10:14 and `Loading model weights took` at
    // 14:10:19: two ranks of 5 s.
    let w = row("/models/mistral-7b", "weight_load");
    assert_eq!(w[2], 2);
    assert_eq!(
        (w[3].as_f64(), w[4].as_f64(), w[5].as_f64()),
        (Some(5.0), Some(5.0), Some(5.0))
    );
    // `model_path='synthetic-61L'`: tp1-nccl-baseline and tp1-nccl-custom-ar (1 rank each)
    // and tp8-baseline, tp8-custom-ar, tp8-custom-ar-fixed (8 each) all load weights:
    // 1 + 1 + 8 + 8 + 8 = 26 ranks.
    assert_eq!(row("synthetic-61L", "weight_load")[2], 26);
    // samples/tgi-tp2 (`model_id: "/models/heron-13b"`): shard 0 starts at 08:15:04.881
    // and is ready at 08:15:20.310 (15.43 s), shard 1 from 08:15:04.8815 to 08:15:21.512
    // (16.63 s); tgi-tp2-oom's shards never finish loading, so only these two count.
    let h = row("/models/heron-13b", "weight_load");
    assert_eq!(h[2], 2);
    let max = h[5].as_f64().expect("max_s");
    assert!((max - 16.63).abs() < 0.01, "{h:?}");
    // Every model's rows: the model names of the samples' config lines (SGLang, vLLM,
    // TGI). LMDeploy's engine config names no model and TensorRT-LLM's samples print no
    // configuration line: their runs have no model and are left out.
    let mut models: Vec<&str> = durations.iter().filter_map(|r| r[0].as_str()).collect();
    models.dedup();
    assert_eq!(
        models,
        [
            "/models/heron-13b",
            "/models/llama-70b",
            "/models/mistral-7b",
            "/models/synthetic-61L",
            "synthetic-61L"
        ]
    );

    // OOMs per setting: (setting, runs, runs_with_oom, oom_ranks).
    let ooms = &results[1];
    let setting = |s: &str| ooms.iter().find(|r| r[0] == s).cloned();
    // Values are JSON text (the parsed configuration): `True` is `true`, a string quoted.
    // `enable_custom_allreduce=True` is printed by tp1-nccl-custom-ar (its one rank OOMs,
    // server.log line 18), tp8-custom-ar (all 8 OOM) and tp8-custom-ar-fixed (ready).
    assert_eq!(
        setting("enable_custom_allreduce=true"),
        Some(json!(["enable_custom_allreduce=true", 3, 2, 9]))
    );
    // tp2-frag-interleaved alone orders its workspace so; both its ranks OOM (lines 23, 34).
    assert_eq!(
        setting("prefill_workspace_order=\"interleaved\""),
        Some(json!(["prefill_workspace_order=\"interleaved\"", 1, 1, 2]))
    );
    // vllm-v0-tp2's worker dies of `CUDA error: out of memory` capturing graphs.
    assert_eq!(
        setting("model=\"/models/mistral-7b\""),
        Some(json!(["model=\"/models/mistral-7b\"", 1, 1, 1]))
    );
    // Servers whose configuration is not `key=value` are counted too. TGI:
    // tgi-tp2-oom's `Args { … cuda_memory_fraction: 0.6 … }` (launcher.log line 1), shard 1
    // out of memory (line 16); tgi-tp2 has 1.0 and is ready.
    assert_eq!(
        setting("cuda_memory_fraction=0.6"),
        Some(json!(["cuda_memory_fraction=0.6", 1, 1, 1]))
    );
    assert_eq!(setting("cuda_memory_fraction=1.0"), None);
    // LMDeploy: lmdeploy-tp1-oom's `PytorchEngineConfig(… cache_max_entry_count=0.95 …)`
    // (server.log line 1), out of memory at line 12; lmdeploy-tp1 has 0.8.
    assert_eq!(
        setting("cache_max_entry_count=0.95"),
        Some(json!(["cache_max_entry_count=0.95", 1, 1, 1]))
    );
    // tp1-nccl-baseline and tp8-baseline (`False`) both reach ready: not listed.
    assert_eq!(setting("enable_custom_allreduce=false"), None);
    // `pp_size=1` is printed by every SGLang sample (11, tp2-nccl-2gpu's server.log line 1
    // among them), of which 3 OOM: tp1-nccl-custom-ar (1 rank), tp2-frag-interleaved (2),
    // tp8-custom-ar (8) = 11 ranks.
    assert_eq!(setting("pp_size=1"), Some(json!(["pp_size=1", 11, 3, 11])));
}
