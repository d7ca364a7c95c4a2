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
use serde_json::Value;

const DOCUMENTS: [&str; 7] = [
    "summary", "events", "diff", "event", "phase", "mem", "mem-diff",
];
const SAMPLES: [&str; 3] = [
    "samples/tp8-baseline",
    "samples/tp8-custom-ar",
    "samples/tp8-custom-ar-fixed",
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

/// A validator for the subset of JSON Schema (draft 7) that schemars 0.8 writes: `type`
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
            "minimum",
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
            check(root, items, x, &format!("{at}[{i}]"))?;
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

fn conforms(name: &str, doc: &Value) {
    let schema: Value = serde_json::from_str(&committed(name)).expect("schema is JSON");
    if let Err(e) = check(&schema, &schema, doc, "$") {
        panic!("{name} output does not conform to docs/schema/{name}.schema.json: {e}");
    }
}

#[test]
fn sample_outputs_conform_to_the_schemas() {
    for run in SAMPLES {
        let v: Value =
            serde_json::from_slice(&rankscope(&["summary", run, "--json"])).expect("JSON");
        conforms("summary", &v);
        let v: Value =
            serde_json::from_slice(&rankscope(&["events", run, "--json"])).expect("JSON");
        conforms("events", &v);
        let nd = rankscope(&["events", run, "--ndjson"]);
        for line in String::from_utf8_lossy(&nd).lines() {
            let v: Value = serde_json::from_str(line).expect("NDJSON line");
            conforms("event", &v);
        }
        let nd = rankscope(&["summary", run, "--ndjson"]);
        for line in String::from_utf8_lossy(&nd).lines() {
            let v: Value = serde_json::from_str(line).expect("NDJSON line");
            conforms("phase", &v);
        }
        let v: Value =
            serde_json::from_slice(&rankscope(&["diff", "samples/tp8-baseline", run, "--json"]))
                .expect("JSON");
        conforms("diff", &v);
        let snap = format!("{run}/snapshot_rank0.pickle");
        let v: Value = serde_json::from_slice(&rankscope(&["mem", &snap, "--json"])).expect("JSON");
        conforms("mem", &v);
        let v: Value = serde_json::from_slice(&rankscope(&[
            "mem",
            "diff",
            "samples/tp8-baseline/snapshot_rank0.pickle",
            &snap,
            "--json",
        ]))
        .expect("JSON");
        conforms("mem-diff", &v);
    }
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let schema: Value = serde_json::from_str(&committed("event")).expect("schema is JSON");
    let bad_type = serde_json::json!({"type": "nonsense", "schema_version": 1,
        "run": {"name": "r", "hash": null}, "data": {}});
    assert!(check(&schema, &schema, &bad_type, "$").is_err());
    let bad_phase = serde_json::json!({"type": "rank", "schema_version": 3,
        "run": {"name": "r", "hash": null}, "data": {
        "rank": "TP0", "process": false, "outcome": "ready", "last_phase": "warmup",
        "reached_ready": false, "failure": null}});
    assert!(check(&schema, &schema, &bad_phase, "$").is_err());
    // A log that ends is `incomplete`; there is no `hang` outcome to claim.
    let hang = serde_json::json!({"type": "rank", "schema_version": 3,
        "run": {"name": "r", "hash": null}, "data": {
        "rank": "TP0", "process": false, "outcome": "hang", "last_phase": "kv_cache",
        "reached_ready": false, "failure": null}});
    assert!(check(&schema, &schema, &hang, "$").is_err());
    let good = serde_json::json!({"type": "rank", "schema_version": 3,
        "run": {"name": "r", "hash": null}, "data": {
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
    assert!(msgs.iter().all(|m| m["schema_version"] == 3));
    // Every line names its run: the path as given, and the content hash of its log and
    // nvidia-smi files. 596d1b4acaed7941 is what Python's `xxhash` package gives for
    // xxh3_64(b"".join(struct.pack("<Q", d) for d in sorted(xxh3_64_intdigest(f) for f in
    // (server.log, stdout.txt, nvidia-smi-gpu.csv)))) over samples/tp8-custom-ar.
    for m in &msgs {
        assert_eq!(m["run"]["name"], "samples/tp8-custom-ar", "{m}");
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
    assert_eq!(recs.len(), 40);
    assert!(recs.iter().all(|r| r["type"] == "phase"
        && r["schema_version"] == 3
        && r["run"]["hash"] == "596d1b4acaed7941"));
    let find = |rank: &str, phase: &str| {
        recs.iter()
            .find(|r| r["data"]["rank"] == rank && r["data"]["phase"] == phase)
            .unwrap_or_else(|| panic!("no {rank} {phase}"))
    };
    // server.log: `[2026-11-29 09:18:35 TP0] Init torch distributed begin.` and line 30
    // `[… 09:18:37 TP0] Init torch distributed ends. elapsed=1.45 s, mem usage=0.64 GB`.
    let d = &find("TP0", "dist_init")["data"];
    assert_eq!(d["start"], "2026-11-29T09:18:35");
    assert_eq!(d["end"], "2026-11-29T09:18:37");
    assert_eq!(d["duration_s"], 2.0);
    assert_eq!(d["outcome"], "failed");
    assert_eq!(d["failed_here"], false);
    // 0.64 GiB = 687,194,767.36 bytes, printed to 0.01 GiB = 10,737,418 bytes.
    assert_eq!(d["figures"]["mem_usage"]["bytes"], 687_194_767);
    assert_eq!(d["figures"]["mem_usage"]["resolution_bytes"], 10_737_418);
    assert_eq!(d["figures"]["mem_usage"]["line"], 30);
    assert_eq!(d["figures"]["elapsed"]["value"], 1.45);
    assert!(d["figures"]["elapsed"]["bytes"].is_null());
    // TP0's OOM is in cuda_graph: the phase never ended, so no end and no duration.
    let g = &find("TP0", "cuda_graph")["data"];
    assert_eq!(g["failed_here"], true);
    assert_eq!(g["failure_kind"], "oom");
    assert!(g["duration_s"].is_null());
    assert_eq!(g["complete"], false);
}
