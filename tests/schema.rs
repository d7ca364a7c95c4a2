//! The published JSON Schemas (docs/schema/) are what `rankscope schema` generates from the
//! output types, and the real outputs on the samples conform to them.
//!
//! After changing an output type on purpose: `UPDATE_SCHEMAS=1 cargo test --test schema`,
//! then review the diff of docs/schema/, and bump SCHEMA_VERSION and CHANGELOG.md if a
//! field was removed, renamed or changed type.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use assert_cmd::Command;
use serde_json::{json, Value};

#[macro_use]
mod common;

#[path = "schema/shapes.rs"]
mod shapes;
use shapes::Shapes;

const DOCUMENTS: [&str; 7] = [
    "summary", "events", "diff", "event", "phase", "mem", "mem-diff",
];

fn rankscope(args: &[&str]) -> Vec<u8> {
    let out = Command::cargo_bin("rankscope")
        .expect("binary built")
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("runs");
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "rankscope {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn committed(name: &str) -> String {
    let path = Path::new("docs/schema").join(format!("{name}.schema.json"));
    std::fs::read_to_string(&path).unwrap_or_default()
}

#[test]
fn committed_schemas_match_the_output_types() {
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for name in DOCUMENTS {
        let generated = String::from_utf8(rankscope(&["schema", name])).expect("UTF-8");
        if generated != committed(name) {
            if update {
                let path = Path::new("docs/schema").join(format!("{name}.schema.json"));
                std::fs::write(&path, &generated).expect("write schema");
            } else {
                stale.push(name);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "docs/schema/{{{}}}.schema.json differ from the output types in src/render/json.rs.\n\
         If the change is intended: UPDATE_SCHEMAS=1 cargo test --test schema, review the \
         diff, and bump SCHEMA_VERSION + CHANGELOG.md for anything that is not an addition.",
        stale.join(",")
    );
}

#[test]
fn every_document_requires_schema_version() {
    for name in DOCUMENTS {
        let s: Value = serde_json::from_str(&committed(name)).expect("schema is JSON");
        let required = s["required"].as_array().cloned().unwrap_or_default();
        assert!(
            required.contains(&Value::from("schema_version")),
            "{name}: schema_version not required"
        );
    }
}

/// A validator for the subset of JSON Schema (draft 7) that schemars writes with our
/// settings (src/render/json/schema_gen.rs): `type`
/// (also as a list), `properties`, `required`, `additionalProperties`, `items`, `enum`,
/// `$ref` to `#/definitions/…`, `anyOf`, `oneOf`, `allOf`, and `true` for any value.
/// Unknown keywords fail the test so that a schemars upgrade cannot silently widen it.
fn check(root: &Value, schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if schema == &Value::Bool(true) {
        return Ok(());
    }
    let obj = schema
        .as_object()
        .ok_or_else(|| format!("{at}: schema is not an object"))?;
    for k in obj.keys() {
        let known = [
            "$schema",
            "title",
            "description",
            "type",
            "format",
            "pattern",
            "minimum",
            "maximum",
            "minItems",
            "maxItems",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "enum",
            "$ref",
            "anyOf",
            "oneOf",
            "allOf",
            "definitions",
        ];
        if !known.contains(&k.as_str()) {
            return Err(format!("{at}: keyword {k} not understood by this test"));
        }
    }
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/definitions/");
        let target = &root["definitions"][name];
        check(root, target, v, at)?;
    }
    if let Some(t) = obj.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "null" => v.is_null(),
            "boolean" => v.is_boolean(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "string" => v.is_string(),
            "array" => v.is_array(),
            "object" => v.is_object(),
            _ => false,
        });
        if !ok {
            return Err(format!("{at}: {v} is not of type {types:?}"));
        }
        if let (Some(min), Some(n)) = (obj.get("minimum").and_then(Value::as_f64), v.as_f64()) {
            if n < min {
                return Err(format!("{at}: {n} below minimum {min}"));
            }
        }
        if let (Some(max), Some(n)) = (obj.get("maximum").and_then(Value::as_f64), v.as_f64()) {
            if n > max {
                return Err(format!("{at}: {n} above maximum {max}"));
            }
        }
    }
    if let (Some(p), Some(text)) = (obj.get("pattern").and_then(Value::as_str), v.as_str()) {
        let re = regex::Regex::new(p).map_err(|e| format!("{at}: pattern {p}: {e}"))?;
        if !re.is_match(text) {
            return Err(format!("{at}: {text:?} does not match {p}"));
        }
    }
    if let Some(e) = obj.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            return Err(format!("{at}: {v} not in {e:?}"));
        }
    }
    if let Some(m) = v.as_object() {
        let props = obj.get("properties").and_then(Value::as_object);
        for r in obj
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = r.as_str().unwrap_or_default();
            if !m.contains_key(r) {
                return Err(format!("{at}: required {r} missing"));
            }
        }
        for (k, x) in m {
            let here = format!("{at}.{k}");
            match (
                props.and_then(|p| p.get(k)),
                obj.get("additionalProperties"),
            ) {
                (Some(s), _) => check(root, s, x, &here)?,
                (None, Some(s)) => check(root, s, x, &here)?,
                // JSON Schema allows extra properties unless told otherwise; here an
                // output field that no branch of the schema names is drift, and fails.
                (None, None) if props.is_some() && !named_in_branches(root, obj, k) => {
                    return Err(format!("{here}: not in the schema"));
                }
                (None, None) => {}
            }
        }
    }
    if let (Some(items), Some(a)) = (obj.get("items"), v.as_array()) {
        for (i, x) in a.iter().enumerate() {
            // A tuple's items are one schema per position.
            let item = match items {
                Value::Array(each) => each.get(i).unwrap_or(&Value::Bool(true)),
                one => one,
            };
            check(root, item, x, &format!("{at}[{i}]"))?;
        }
        let n = a.len() as u64;
        if obj
            .get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|m| n < m)
            || obj
                .get("maxItems")
                .and_then(Value::as_u64)
                .is_some_and(|m| n > m)
        {
            return Err(format!("{at}: {n} items, outside minItems/maxItems"));
        }
    }
    // A flattened struct puts its own fields beside the branch's (`schema_version` beside
    // `type`/`data`): the branches see the value without the fields this level names.
    let owned = v.clone();
    let v = &match (owned, obj.get("properties").and_then(Value::as_object)) {
        (Value::Object(mut m), Some(p)) => {
            m.retain(|k, _| !p.contains_key(k));
            Value::Object(m)
        }
        (o, _) => o,
    };
    if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
        for s in all {
            check(root, s, v, at)?;
        }
    }
    if let Some(any) = obj.get("anyOf").and_then(Value::as_array) {
        if !any.iter().any(|s| check(root, s, v, at).is_ok()) {
            return Err(format!("{at}: {v} matches none of anyOf"));
        }
    }
    if let Some(one) = obj.get("oneOf").and_then(Value::as_array) {
        let n = one.iter().filter(|s| check(root, s, v, at).is_ok()).count();
        if n != 1 {
            return Err(format!("{at}: {v} matches {n} of oneOf"));
        }
    }
    Ok(())
}

fn named_in_branches(root: &Value, obj: &serde_json::Map<String, Value>, key: &str) -> bool {
    ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|c| obj.get(*c).and_then(Value::as_array))
        .flatten()
        .any(|b| {
            let b = match b.get("$ref").and_then(Value::as_str) {
                Some(r) => &root["definitions"][r.trim_start_matches("#/definitions/")],
                None => b,
            };
            b.get("properties").and_then(|p| p.get(key)).is_some()
        })
}

/// Every run of samples/, and the diff pairs the README, docs and tests use.
fn sample_runs() -> Vec<String> {
    let mut runs: Vec<String> = std::fs::read_dir("samples")
        .expect("samples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 20, "samples/ holds 20 runs");
    runs
}

const DIFF_PAIRS: [(&str, &str); 10] = [
    ("tp8-baseline", "tp8-baseline"),
    ("tp8-baseline", "tp8-custom-ar"),
    ("tp8-baseline", "tp8-custom-ar-fixed"),
    ("tp1-nccl-baseline", "tp1-nccl-custom-ar"),
    ("tp2-frag-grouped", "tp2-frag-interleaved"),
    ("tp2-nccl-2gpu", "tp2-straggler"),
    ("trtllm-tp2", "trtllm-tp2-nccl"),
    ("vllm-tp2", "vllm-tp2-oom"),
    ("tgi-tp2", "tgi-tp2-oom"),
    ("lmdeploy-tp1", "lmdeploy-tp1-oom"),
];

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON line"))
        .collect()
}

/// Every document of every sample and of every diff pair, with its schema's name.
fn every_document() -> Vec<(String, &'static str, Value)> {
    let per_run = common::par_map(&sample_runs(), |run| {
        let run = run.clone();
        let mut docs = Vec::new();
        let json = |args: &[&str]| serde_json::from_slice(&rankscope(args)).expect("JSON");
        docs.push((run.clone(), "summary", json(&["summary", &run, "--json"])));
        docs.push((run.clone(), "events", json(&["events", &run, "--json"])));
        for v in json_lines(&rankscope(&[
            "events",
            &run,
            "--ndjson",
            "--attempt",
            "all",
        ])) {
            docs.push((run.clone(), "event", v));
        }
        for v in json_lines(&rankscope(&[
            "summary",
            &run,
            "--ndjson",
            "--attempt",
            "all",
        ])) {
            docs.push((run.clone(), "phase", v));
        }
        let snap = format!("{run}/snapshot_rank0.pickle");
        if Path::new(&snap).exists() {
            docs.push((snap.clone(), "mem", json(&["mem", &snap, "--json"])));
        }
        docs
    });
    let mut docs: Vec<(String, &'static str, Value)> = per_run.into_iter().flatten().collect();
    let diffs = common::par_map(&DIFF_PAIRS, |(b, c)| {
        let (b, c) = (format!("samples/{b}"), format!("samples/{c}"));
        let v = serde_json::from_slice(&rankscope(&["diff", &b, &c, "--json"])).expect("JSON");
        (format!("{b} {c}"), "diff", v)
    });
    docs.extend(diffs);
    let v = serde_json::from_slice(&rankscope(&[
        "mem",
        "diff",
        "samples/tp8-baseline/snapshot_rank0.pickle",
        "samples/tp8-custom-ar/snapshot_rank0.pickle",
        "--json",
    ]))
    .expect("JSON");
    docs.push(("mem diff".into(), "mem-diff", v));
    docs
}

/// The runs under tests/fixtures and the verdict logs of tests/verdicts (each read as
/// `summary` reads it, with the grammar a fixture brings), and the snapshots under tests/
/// that `mem` reads (the hostile ones it refuses give no document).
fn every_fixture_document() -> Vec<(String, &'static str, Value)> {
    let mut runs: Vec<Vec<String>> = [
        "out-of-order-kv",
        "pptp-sglang",
        "time/load_11s.log",
        "time/load_3s.log",
        "time/load_3s_jitter.log",
        "vllm-tp2-stray-sglang-line",
        "wrap-compose-2node/stream.log",
        "wrap-kubectl-lws/stream.log",
    ]
    .iter()
    .map(|f| vec![format!("tests/fixtures/{f}")])
    .collect();
    runs.push(vec![
        "tests/fixtures/made-up-server/run".into(),
        "--grammar".into(),
        "tests/fixtures/made-up-server/pagesrv.toml".into(),
    ]);
    let mut logs: Vec<String> = std::fs::read_dir("tests/verdicts")
        .expect("tests/verdicts")
        .filter_map(|e| e.ok().map(|e| e.path().to_string_lossy().into_owned()))
        .filter(|p| p.ends_with(".log"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 70, "tests/verdicts holds {} logs", logs.len());
    // The fixture runs through all four run documents; the verdict logs (75, each a
    // second of start-up in a debug build) through `summary --json` and
    // `events --ndjson`, which hold every type the other two do.
    let fixtures = runs.len();
    runs.extend(logs.into_iter().map(|l| vec![l]));
    let numbered: Vec<(usize, &Vec<String>)> = runs.iter().enumerate().collect();
    let per_run = common::par_map(&numbered, |&(i, run)| {
        let mut docs = Vec::new();
        let with = |cmd: &[&str]| -> Vec<u8> {
            let mut a: Vec<&str> = cmd.to_vec();
            a.extend(run.iter().map(String::as_str));
            rankscope(&a)
        };
        let what = run.join(" ");
        let json = |b: Vec<u8>| serde_json::from_slice(&b).expect("JSON");
        docs.push((what.clone(), "summary", json(with(&["summary", "--json"]))));
        for v in json_lines(&with(&["events", "--ndjson", "--attempt", "all"])) {
            docs.push((what.clone(), "event", v));
        }
        if i < fixtures {
            docs.push((what.clone(), "events", json(with(&["events", "--json"]))));
            for v in json_lines(&with(&["summary", "--ndjson", "--attempt", "all"])) {
                docs.push((what.clone(), "phase", v));
            }
        }
        docs
    });
    let mut docs: Vec<(String, &'static str, Value)> = per_run.into_iter().flatten().collect();
    let mut pickles = vec!["tests/fixtures/tp2-allstacks/snapshot_rank0.pickle".to_string()];
    for dir in ["tests/hostile", "tests/hostile/turn3"] {
        let mut more: Vec<String> = std::fs::read_dir(dir)
            .expect("tests/hostile")
            .filter_map(|e| e.ok().map(|e| e.path().to_string_lossy().into_owned()))
            .filter(|p| p.ends_with(".pickle"))
            .collect();
        more.sort();
        pickles.extend(more);
    }
    for p in pickles {
        let out = Command::cargo_bin("rankscope")
            .expect("binary built")
            .args(["mem", &p, "--json"])
            .output()
            .expect("runs");
        if out.status.success() {
            docs.push((p, "mem", serde_json::from_slice(&out.stdout).expect("JSON")));
        }
    }
    docs
}

/// ../shared's real GPU runs, when they are there: every run directory of fixtures/gpu
/// and fixtures/gpu2 through the same documents and rules.
#[test]
#[ignore = "needs ../shared/fixtures (real GPU runs)"]
fn every_document_of_the_shared_gpu_runs_has_one_shape_per_concept() {
    let mut dirs = Vec::new();
    for set in ["../shared/fixtures/gpu", "../shared/fixtures/gpu2"] {
        let entries = std::fs::read_dir(set).unwrap_or_else(|e| panic!("{set}: {e}"));
        dirs.extend(
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .map(|p| p.to_string_lossy().into_owned()),
        );
    }
    dirs.sort();
    assert!(
        dirs.len() >= 10,
        "../shared/fixtures holds {} runs",
        dirs.len()
    );
    let mut docs = Vec::new();
    for d in &dirs {
        let json = |args: &[&str]| serde_json::from_slice(&rankscope(args)).expect("JSON");
        docs.push((d.clone(), "summary", json(&["summary", d, "--json"])));
        docs.push((d.clone(), "events", json(&["events", d, "--json"])));
        for v in json_lines(&rankscope(&["summary", d, "--ndjson"])) {
            docs.push((d.clone(), "phase", v));
        }
    }
    conforms_with_one_shape(&docs);
}

#[test]
fn every_document_of_every_sample_conforms_and_has_one_shape_per_concept() {
    let mut docs = every_document();
    docs.extend(every_fixture_document());
    conforms_with_one_shape(&docs);
}

/// Every document validates against its schema, and no concept has a second shape.
fn conforms_with_one_shape(docs: &[(String, &'static str, Value)]) {
    for (what, schema, doc) in docs {
        let s: Value = serde_json::from_str(&committed(schema)).expect("schema is JSON");
        if let Err(e) = check(&s, &s, doc, "$") {
            panic!(
                "{what}: {schema} output does not conform to docs/schema/{schema}.schema.json: {e}"
            );
        }
    }
    let mut shapes = Shapes::default();
    for (what, schema, doc) in docs {
        shapes.walk(doc, &format!("{what} ({schema}) $"));
        // The identity block: `identity` of summary and events, `run` of every NDJSON
        // line, `baseline` and `candidate` of diff.
        let ids: Vec<&Value> = match *schema {
            "summary" | "events" => vec![&doc["identity"]],
            "event" | "phase" => vec![&doc["run"]],
            "diff" => vec![&doc["baseline"], &doc["candidate"]],
            _ => vec![],
        };
        for id in ids {
            identity_shape(id).unwrap_or_else(|e| panic!("{what} ({schema}): {e}: {id}"));
        }
    }
    assert!(
        shapes.errors.is_empty(),
        "concepts in two shapes ({} places):\n{}",
        shapes.errors.len(),
        shapes
            .errors
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(shapes.memory_seen > 0, "the walk saw no memory");
}

/// The committed schemas hold every field, also those the samples leave null or empty:
/// every `…_bytes` property is a `MemoryDoc` in all seven.
#[test]
fn every_byte_field_of_every_schema_is_memory() {
    let errors: Vec<String> = DOCUMENTS
        .iter()
        .flat_map(|name| {
            let s: Value = serde_json::from_str(&committed(name)).expect("schema is JSON");
            shapes::schema_errors(name, &s)
        })
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The identity block's keys (docs/json.md, *Identity*), its name free of path separators.
fn identity_shape(id: &Value) -> Result<(), String> {
    let keys: Vec<&str> = id
        .as_object()
        .ok_or("identity is not an object")?
        .keys()
        .map(String::as_str)
        .collect();
    let want = [
        "attempt",
        "attempts",
        "first_line",
        "hash",
        "name",
        "paths",
        "ready_at",
        "server",
        "to_ready_s",
        "version",
    ];
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    if sorted != want {
        return Err(format!("identity keys {sorted:?}"));
    }
    let name = id["name"].as_str().ok_or("no name")?;
    if name.contains('/') || name.is_empty() {
        return Err(format!("identity name {name:?} is a path"));
    }
    Ok(())
}

#[test]
fn the_validator_holds_an_integer_to_its_bounds() {
    // schemars 1 bounds the small integer types: an `i8` (`sign`) is -128..=127.
    let sign = json!({"type": "integer", "format": "int8", "maximum": 127.0, "minimum": -128.0});
    assert_eq!(check(&sign, &sign, &json!(-1), "$"), Ok(()));
    assert_eq!(check(&sign, &sign, &json!(127), "$"), Ok(()));
    assert!(check(&sign, &sign, &json!(128), "$").is_err());
    assert!(check(&sign, &sign, &json!(-129), "$").is_err());
}

/// An identity block as every NDJSON line carries it (`run`).
static IDENTITY: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    json!({"name": "r", "paths": "r", "hash": null, "server": null, "version": null,
           "attempt": 1, "attempts": 1, "first_line": null, "ready_at": null,
           "to_ready_s": null})
});

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let schema: Value = serde_json::from_str(&committed("event")).expect("schema is JSON");
    let bad_type = serde_json::json!({"type": "nonsense", "schema_version": 1,
        "run": IDENTITY.clone(), "data": {}});
    assert!(check(&schema, &schema, &bad_type, "$").is_err());
    let bad_phase = serde_json::json!({"type": "rank", "schema_version": 5,
        "run": IDENTITY.clone(), "data": {
        "rank": "TP0", "process": false, "outcome": "ready", "last_phase": "warmup",
        "reached_ready": false, "failure": null}});
    assert!(check(&schema, &schema, &bad_phase, "$").is_err());
    // A log that ends is `incomplete`; there is no `hang` outcome to claim.
    let hang = serde_json::json!({"type": "rank", "schema_version": 5,
        "run": IDENTITY.clone(), "data": {
        "rank": "TP0", "process": false, "outcome": "hang", "last_phase": "kv_cache",
        "reached_ready": false, "failure": null}});
    assert!(check(&schema, &schema, &hang, "$").is_err());
    let good = serde_json::json!({"type": "rank", "schema_version": 5,
        "run": IDENTITY.clone(), "data": {
        "rank": "TP0", "process": false, "outcome": "ready", "last_phase": "ready",
        "reached_ready": true, "failure": null}});
    assert_eq!(check(&schema, &schema, &good, "$"), Ok(()));
    let mut extra = good.clone();
    extra["data"]["undocumented"] = 1.into();
    assert!(check(&schema, &schema, &extra, "$").is_err());
}

#[test]
fn ndjson_stream_is_run_events_ranks_failures_summary() {
    let nd = rankscope(&["events", "samples/tp8-custom-ar", "--ndjson"]);
    let msgs: Vec<Value> = String::from_utf8_lossy(&nd)
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON line"))
        .collect();
    let types: Vec<&str> = msgs.iter().filter_map(|m| m["type"].as_str()).collect();
    let order = |t: &str| {
        ["run", "event", "rank", "failure", "summary"]
            .iter()
            .position(|x| *x == t)
    };
    assert!(
        types.windows(2).all(|w| order(w[0]) <= order(w[1])),
        "messages out of order: {types:?}"
    );
    assert_eq!(types.first(), Some(&"run"));
    assert_eq!(types.last(), Some(&"summary"));
    assert_eq!(types.iter().filter(|t| **t == "rank").count(), 8);
    let failures: Vec<&Value> = msgs.iter().filter(|m| m["type"] == "failure").collect();
    assert_eq!(failures.len(), 8);
    assert_eq!(failures[0]["data"]["kind"], "oom");
    assert_eq!(failures[0]["data"]["phase"], "cuda_graph");
    assert_eq!(
        failures[0]["data"]["fields"]["requested_bytes"]["bytes"],
        20_971_520
    );
    let summary = &msgs[msgs.len() - 1]["data"];
    assert_eq!(summary["failed_ranks"], 8);
    assert_eq!(summary["ready"], false);
    assert!(msgs.iter().all(|m| m["schema_version"] == 5));
    // Every line names its run: its directory's name, the path as given, and the content
    // hash of its log and nvidia-smi files. 596d1b4acaed7941 is what Python's `xxhash` package gives for
    // xxh3_64(b"".join(struct.pack("<Q", d) for d in sorted(xxh3_64_intdigest(f) for f in
    // (server.log, stdout.txt, nvidia-smi-gpu.csv)))) over samples/tp8-custom-ar.
    for m in &msgs {
        assert_eq!(m["run"]["name"], "tp8-custom-ar", "{m}");
        assert_eq!(m["run"]["paths"], "samples/tp8-custom-ar", "{m}");
        assert_eq!(m["run"]["server"], "sglang", "{m}");
        assert_eq!(m["run"]["hash"], "596d1b4acaed7941", "{m}");
    }
    assert_eq!(summary["root"], "TP2");

    let one = rankscope(&[
        "events",
        "samples/tp8-custom-ar",
        "--ndjson",
        "--rank",
        "TP3",
    ]);
    let ranks: Vec<Value> = String::from_utf8_lossy(&one)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["type"] == "rank")
        .collect();
    assert_eq!(ranks.len(), 1);
    assert_eq!(ranks[0]["data"]["rank"], "TP3");
}

/// `summary --ndjson`: one record per rank × phase. samples/tp8-custom-ar has 8 ranks,
/// each with launch, dist_init, weight_load, kv_cache and cuda_graph lines and no ready
/// line (all 8 ran out of memory capturing graphs): 8 × 5 = 40 records.
#[test]
fn summary_ndjson_is_one_record_per_rank_and_phase() {
    let nd = rankscope(&["summary", "samples/tp8-custom-ar", "--ndjson"]);
    let recs: Vec<Value> = String::from_utf8_lossy(&nd)
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON line"))
        .collect();
    // 40 phase records, then the run's memory (issue 31's breakdown and capacity, as
    // `summary --json`'s `memory`).
    assert_eq!(recs.len(), 41);
    assert_eq!(recs[40]["type"], "memory");
    assert!(recs[40]["data"]["capacity"].is_object());
    let recs = &recs[..40];
    assert!(recs.iter().all(|r| r["type"] == "phase"
        && r["schema_version"] == 5
        && r["run"]["hash"] == "596d1b4acaed7941"));
    let find = |rank: &str, phase: &str| {
        recs.iter()
            .find(|r| r["data"]["rank"] == rank && r["data"]["phase"] == phase)
            .unwrap_or_else(|| panic!("no {rank} {phase}"))
    };
    // server.log: `[2026-11-29 09:18:35 TP0] Init torch distributed begin.` and line 30
    // `[… 09:18:37 TP0] Init torch distributed ends. elapsed=1.45 s, mem usage=0.64 GB`.
    let d = &find("TP0", "dist_init")["data"];
    assert_eq!(
        d["start"],
        json!({"at": "2026-11-29T09:18:35.000000-00:00", "resolution_s": 1.0})
    );
    assert_eq!(d["end"]["at"], "2026-11-29T09:18:37.000000-00:00");
    assert_eq!(d["duration_s"], 2.0);
    assert_eq!(d["outcome"], "failed");
    assert_eq!(d["failed_here"], false);
    // 0.64 GiB = 687,194,767.36 bytes, printed to 0.01 GiB = 10,737,418 bytes.
    let figure = |name: &str| {
        d["figures"]
            .as_array()
            .and_then(|fs| fs.iter().find(|f| f["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {d}"))
    };
    assert_eq!(
        figure("mem_usage"),
        json!({"name": "mem_usage", "unit": "bytes", "value": 687_194_767u64,
               "resolution": 10_737_418u64, "source": "samples/tp8-custom-ar/server.log",
               "line": 30})
    );
    assert_eq!(figure("elapsed")["unit"], "seconds");
    assert_eq!(figure("elapsed")["value"], 1.45);
    // TP0's OOM is in cuda_graph: the phase never ended, so no end and no duration.
    let g = &find("TP0", "cuda_graph")["data"];
    assert_eq!(g["failed_here"], true);
    assert_eq!(g["failure_kind"], "oom");
    assert!(g["duration_s"].is_null());
    assert_eq!(g["complete"], false);
}
