//! docs/exports.md's fleet section, run as written: its SQL blocks, in order, on DuckDB and
//! on ClickHouse (its in-process engine, chdb), over `events --ndjson --attempt all`,
//! `summary --ndjson --attempt all` and `diff --json` of the samples.
//!
//! The test needs `python3` with `duckdb` and `chdb`, which `cargo test` alone does not
//! install, so it is ignored there (and shows as ignored, not as passed); `.ci/run` installs
//! both into `target/duckdb-venv` and runs it with `--ignored`, where a missing package
//! fails. Locally: `python3 -m pip install duckdb chdb`, then
//! `cargo test --test fleet_sql -- --ignored` (`RANKSCOPE_DUCKDB_PYTHON` names another
//! interpreter).

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command as Process;

use assert_cmd::Command;
use serde_json::{json, Value};

/// The SQL blocks of the `## Fleets` section of docs/exports.md for one engine (a block's
/// first line is `-- DuckDB` or `-- ClickHouse`).
fn fleet_sql(engine: &str) -> Vec<String> {
    let doc = std::fs::read_to_string("docs/exports.md").expect("docs/exports.md");
    let start = doc.find("## Fleets").expect("a Fleets section");
    let section = &doc[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    let mut blocks = Vec::new();
    let mut rest = &section[..end];
    while let Some(open) = rest.find("```sql\n") {
        let body = &rest[open + 7..];
        let close = body.find("```").expect("closed sql block");
        if body.starts_with(&format!("-- {engine}\n")) {
            blocks.push(body[..close].to_string());
        }
        rest = &body[close..];
    }
    blocks
}

/// Runs every statement of `blocks` in one session of `engine` inside `dir`; the rows of
/// each SELECT, as JSON arrays.
fn run_sql(engine: &str, dir: &Path, blocks: &[String]) -> Vec<Vec<Vec<Value>>> {
    let python = std::env::var("RANKSCOPE_DUCKDB_PYTHON").unwrap_or_else(|_| "python3".into());
    let sql = dir.join(format!("fleet-{engine}.sql"));
    std::fs::write(&sql, blocks.join("\n")).expect("write SQL");
    let script = r#"
import json, sys
engine, path = sys.argv[1], sys.argv[2]
stmts = [s for s in open(path).read().split(";") if s.strip()]
out = []
if engine == "DuckDB":
    try:
        import duckdb
    except ImportError as e:
        sys.exit("the duckdb Python package is missing (%s): .ci/run installs it" % e)
    con = duckdb.connect()
    for stmt in stmts:
        cur = con.execute(stmt)
        body = "\n".join(l for l in stmt.splitlines() if not l.startswith("--")).strip()
        if body.upper().startswith("SELECT"):
            out.append([list(r) for r in cur.fetchall()])
else:
    try:
        from chdb import session
    except ImportError as e:
        sys.exit("the chdb Python package is missing (%s): .ci/run installs it" % e)
    s = session.Session()
    for stmt in stmts:
        body = "\n".join(l for l in stmt.splitlines() if not l.startswith("--")).strip()
        if body.upper().startswith("SELECT"):
            r = s.query(stmt, "JSONCompact")
            out.append(json.loads(r.bytes())["data"])
        else:
            s.query(stmt)
print(json.dumps(out, default=str))
"#;
    let output = Process::new(&python)
        .current_dir(dir)
        .arg("-c")
        .arg(script)
        .arg(engine)
        .arg(&sql)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        output.status.success(),
        "{python} with {engine} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON rows")
}

fn rankscope(args: &[&str]) -> Vec<u8> {
    let out = Command::cargo_bin("rankscope")
        .expect("binary")
        .args(args)
        .output()
        .expect("runs");
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "rankscope {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Numbers as f64 and integers-as-strings (ClickHouse writes 64-bit integers as strings)
/// as numbers, so that both engines' rows compare.
fn normal(rows: &[Vec<Value>]) -> Vec<Vec<Value>> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| match v {
                    Value::Number(n) => json!(n.as_f64()),
                    Value::String(s) => s.parse::<f64>().map_or(v.clone(), |f| json!(f)),
                    other => other.clone(),
                })
                .collect()
        })
        .collect()
}

#[test]
#[ignore = "needs python3 with duckdb and chdb; .ci/run installs them and runs this with --ignored"]
fn the_fleet_recipes_give_the_same_hand_checked_figures_on_duckdb_and_clickhouse() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fleet = dir.path().join("fleet");
    std::fs::create_dir(&fleet).expect("fleet dir");
    let collect = |run: &str, name: &str| {
        let events = rankscope(&["events", run, "--ndjson", "--attempt", "all"]);
        std::fs::write(fleet.join(format!("{name}.events.ndjson")), events).expect("write");
        let phases = rankscope(&["summary", run, "--ndjson", "--attempt", "all"]);
        std::fs::write(fleet.join(format!("{name}.summary.ndjson")), phases).expect("write");
    };
    let mut samples = 0;
    for entry in std::fs::read_dir("samples").expect("samples/") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).expect("name");
            collect(&format!("samples/{name}"), name);
            samples += 1;
        }
    }
    assert_eq!(samples, 20, "samples/ holds 20 runs");
    // A restarted server: tp8-custom-ar's console (all 8 ranks OOM in cuda_graph, TP2
    // first), then tp8-baseline's (ready at 09:18:19, 10 s after its 09:18:09 first line).
    let restarted = dir.path().join("restarted");
    std::fs::create_dir(&restarted).expect("dir");
    let log = [
        std::fs::read("samples/tp8-custom-ar/server.log").expect("sample"),
        std::fs::read("samples/tp8-baseline/server.log").expect("sample"),
    ]
    .concat();
    std::fs::write(restarted.join("server.log"), log).expect("write");
    collect(restarted.to_str().expect("path"), "restarted");
    for (b, c) in [
        ("tp8-baseline", "tp8-custom-ar"),
        ("tp8-baseline", "tp8-custom-ar-fixed"),
        ("trtllm-tp2", "trtllm-tp2-nccl"),
        ("vllm-tp2", "vllm-tp2-oom"),
    ] {
        let doc = rankscope(&[
            "diff",
            &format!("samples/{b}"),
            &format!("samples/{c}"),
            "--json",
        ]);
        std::fs::write(fleet.join(format!("{c}.diff.json")), doc).expect("write");
    }

    let duck = run_sql("DuckDB", dir.path(), &fleet_sql("DuckDB"));
    let click = run_sql("ClickHouse", dir.path(), &fleet_sql("ClickHouse"));
    assert_eq!(duck.len(), 6, "six recipes return rows");
    for (i, (d, c)) in duck.iter().zip(&click).enumerate() {
        assert_eq!(
            normal(d),
            normal(c),
            "recipe {i}: DuckDB and ClickHouse differ"
        );
    }
    let rows = normal(&duck.iter().flatten().cloned().collect::<Vec<_>>());
    let has = |want: Value| {
        let want = normal(&[want.as_array().unwrap().clone()]).remove(0);
        assert!(rows.contains(&want), "{want:?} not in the results");
    };

    // Start-ups per server version: (server, version, startups, logs, ready).
    // vLLM prints its version (`vLLM API server version 0.11.1` in vllm-tp2 and
    // vllm-tp2-oom, `0.6.3` in vllm-v0-tp2); only vllm-tp2 reaches ready (`Application
    // startup complete`). SGLang's samples print none: 11 sample logs plus `restarted`
    // (12 hashes) hold 13 start-ups, of which tp8-baseline, tp8-custom-ar-fixed,
    // tp1-nccl-baseline, tp2-nccl-2gpu, tp2-straggler, node2-skew, tp2-frag-grouped and
    // restarted's second reach `ready to roll`: 8.
    has(json!(["vllm", "0.11.1", 2, 2, 1]));
    has(json!(["vllm", "0.6.3", 1, 1, 0]));
    has(json!(["sglang", "-", 13, 12, 8]));
    // OOMs per setting: (setting, startups, startups_with_oom, oom_ranks).
    // `enable_custom_allreduce=True`: tp1-nccl-custom-ar (1 rank OOMs), tp8-custom-ar (8),
    // tp8-custom-ar-fixed (ready) and restarted's first start-up (8): 4, 3, 17.
    has(json!(["enable_custom_allreduce=true", 4, 3, 17]));
    // tgi-tp2-oom's `cuda_memory_fraction: 0.6` (launcher.log line 1), shard 1 OOM.
    has(json!(["cuda_memory_fraction=0.6", 1, 1, 1]));
    // Which rank fails first: TP2's OOM in cuda_graph roots tp8-custom-ar (its traceback
    // is the first in the file, server.log line 76) and restarted's first start-up.
    has(json!(["TP2", "oom", "cuda_graph", 2]));
    // Time to ready: tp8-baseline's first line 09:18:09, ready 09:18:19 (server.log line
    // 82); restarted's second start-up is the same console.
    has(json!(["2026-11-29 09:18:09", "tp8-baseline", 1, 10.0]));
    has(json!(["2026-11-29 09:18:09", "restarted", 2, 10.0]));
    // vllm-tp2: first line 10:02:11 (the API server's version line); its ready line
    // (`Application startup complete.`, line 28) has no stamp and takes the line before's,
    // 10:03:46 (line 25): 95 s.
    has(json!(["2026-03-14 10:02:11", "vllm-tp2", 1, 95.0]));
    // Diffs: tp8-custom-ar against tp8-baseline failed, TP2 first.
    has(json!([
        "tp8-baseline",
        "tp8-custom-ar",
        "failed",
        "TP2",
        "oom"
    ]));
}
