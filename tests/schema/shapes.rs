//! The rules of docs/json.md, *One shape per concept*, checked by walking documents (and
//! the committed schemas, for fields the samples leave null or empty).

use serde_json::{json, Value};

/// What a walk found that breaks a rule, each with where.
#[derive(Default)]
pub struct Shapes {
    pub errors: Vec<String>,
    /// Memory objects seen, to show the walk reached them.
    pub memory_seen: usize,
}

/// Keys whose strings quote log lines (or words about them), not times.
const QUOTING_KEYS: [&str; 9] = [
    "text",
    "cut_last_line",
    "message",
    "detail",
    "traceback",
    "said",
    "baseline_text",
    "candidate_text",
    "last_line",
];

/// `{bytes, resolution_bytes}`: exactly these two keys, `bytes` an integer (negative for
/// a delta) and `resolution_bytes` an unsigned integer.
pub fn is_memory(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.len() == 2
            && o.get("bytes").is_some_and(|b| b.is_i64() || b.is_u64())
            && o.get("resolution_bytes").is_some_and(Value::is_u64)
    })
}

impl Shapes {
    pub fn walk(&mut self, v: &Value, at: &str) {
        match v {
            Value::Object(o) => {
                self.object(o, at);
                for (k, x) in o {
                    self.walk(x, &format!("{at}.{k}"));
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    self.walk(x, &format!("{at}[{i}]"));
                }
            }
            Value::String(s) => {
                // A time is `{at, resolution_s}` with `at` RFC 3339: a date-time string
                // anywhere else is a second shape of time.
                let dated = s.len() >= 11
                    && s.as_bytes()[..4].iter().all(u8::is_ascii_digit)
                    && s.as_bytes()[4] == b'-'
                    && s.as_bytes()[10] == b'T';
                // Log text quoted as printed may begin with the log's own stamp.
                let quoted = QUOTING_KEYS.iter().any(|k| at.ends_with(&format!(".{k}")));
                if dated && !at.ends_with(".at") && !quoted {
                    self.errors
                        .push(format!("{at}: a time outside a time object: {s}"));
                }
            }
            _ => {}
        }
    }

    fn object(&mut self, o: &serde_json::Map<String, Value>, at: &str) {
        let mut err = |m: String| self.errors.push(format!("{at}: {m}"));
        if o.contains_key("is_bytes") {
            err("an is_bytes flag instead of a unit".into());
        }
        // Memory: one shape, and only that shape says `bytes`.
        let memory = is_memory(&Value::Object(o.clone()));
        if !memory && (o.contains_key("bytes") || o.contains_key("resolution_bytes")) {
            err(format!("memory not `{{bytes, resolution_bytes}}`: {o:?}"));
        }
        for (k, x) in o {
            if memory {
                break;
            }
            if k.ends_with("_bytes") && !x.is_null() && !is_memory(x) {
                err(format!("{k} is not `{{bytes, resolution_bytes}}`: {x}"));
            }
            // A grammar names an event's fields by its capture groups; a regex needs a
            // second name for a second wording of one figure (`mem_usage_bytes_v1`).
            let grammar_named = at.ends_with(".fields") && k.contains("_bytes");
            if is_memory(x) && !k.ends_with("_bytes") && !grammar_named {
                err(format!(
                    "memory under {k}, a key that does not end in _bytes"
                ));
            }
        }
        if let Some(t) = o.get("at") {
            let rfc3339 = t.as_str().is_some_and(|s| {
                s.len() == 32 && s.ends_with("-00:00") && s.as_bytes()[19] == b'.'
            });
            let keys: Vec<&String> = o.keys().collect();
            if !rfc3339 || keys != ["at", "resolution_s"] || !o["resolution_s"].is_number() {
                err(format!("a time not `{{at, resolution_s}}`: {o:?}"));
            }
        }
        if let Some(unit) = o.get("unit") {
            let known = ["bytes", "seconds", "tokens", "count"];
            // A grammar's declared figure counts in a word of its own (`pages`): a
            // lower-case word, never a second spelling of memory or time.
            let memory_or_time = ["b", "kib", "mib", "gib", "kb", "mb", "gb", "s", "ms", "sec"];
            let declared = |u: &str| {
                !u.is_empty()
                    && u.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                    && !memory_or_time.contains(&u)
                    && !u.starts_with("byte")
                    && !u.starts_with("second")
            };
            if !unit
                .as_str()
                .is_some_and(|u| known.contains(&u) || declared(u))
            {
                err(format!("unit {unit}"));
            }
            // The unit says what the numbers are: no key of the object says it again.
            if let Some(k) = o
                .keys()
                .find(|k| k.ends_with("_bytes") || k.ends_with("_s"))
            {
                err(format!("{k} beside a unit"));
            }
            if !o.contains_key("resolution") && !o.contains_key("threshold") {
                err("a figure without its resolution".into());
            }
            // A figure is named by `name` (schema 4's diff named it by `figure`).
            if o.contains_key("figure") {
                err("a figure named by `figure`, not `name`".into());
            }
        }
        // A figure reading names its unit.
        let numeric = o.get("value").is_some_and(Value::is_number);
        if o.contains_key("name") && numeric && !o.contains_key("unit") {
            err(format!("a figure without a unit: {o:?}"));
        }
        self.memory_seen += usize::from(memory);
    }
}

/// The same rule over a committed schema: every property named `…_bytes` is a
/// `MemoryDoc` (or null), no property is a bare `bytes` outside `MemoryDoc`, and no
/// property is one of the precision keys a second shape used (`plus_minus_bytes`, …).
pub fn schema_errors(name: &str, schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let defs = schema["definitions"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut types: Vec<(String, &Value)> = defs.iter().map(|(k, v)| (k.clone(), v)).collect();
    types.push((name.to_string(), schema));
    let is_memory_ref = |p: &Value| -> bool {
        let refs = |v: &Value| v["$ref"].as_str() == Some("#/definitions/MemoryDoc");
        let null = |v: &Value| v["type"].as_str() == Some("null");
        refs(p)
            || p["allOf"].as_array().is_some_and(|a| a.iter().all(refs))
            || p["anyOf"]
                .as_array()
                .is_some_and(|a| a.iter().any(refs) && a.iter().all(|v| refs(v) || null(v)))
    };
    for (t, def) in types {
        if t == "MemoryDoc" {
            continue;
        }
        for (k, p) in def["properties"].as_object().into_iter().flatten() {
            if k == "bytes" || k == "resolution_bytes" {
                out.push(format!("{name}: {t}.{k} outside MemoryDoc"));
            } else if k.ends_with("_bytes") && !is_memory_ref(p) {
                out.push(format!("{name}: {t}.{k} is not a MemoryDoc: {p}"));
            }
        }
    }
    out
}

#[test]
fn the_shape_rules_reject_a_second_shape() {
    let mut s = Shapes::default();
    s.walk(
        &json!({"figures": [{"name": "mem_usage", "value": 1, "is_bytes": true}]}),
        "$",
    );
    // The flag, `is_bytes` read as a memory key, and the figure without a unit.
    assert_eq!(s.errors.len(), 3, "{:?}", s.errors);
    let mut s = Shapes::default();
    s.walk(&json!({"ts": "2026-11-29T09:18:09"}), "$");
    assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
    // Schema 4's diff figure, named by `figure`; a declared unit word passes, a second
    // spelling of memory does not.
    let mut s = Shapes::default();
    s.walk(
        &json!({"figures": [{"phase": "kv_cache", "figure": "tokens", "unit": "tokens",
                             "resolution": 1.0}]}),
        "$",
    );
    assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
    for (unit, errors) in [("pages", 0), ("mib", 1), ("GiB", 1)] {
        let mut s = Shapes::default();
        s.walk(
            &json!({"name": "kv_pages", "unit": unit, "value": 2, "resolution": 1.0}),
            "$",
        );
        assert_eq!(s.errors.len(), errors, "{unit}: {:?}", s.errors);
    }
    // Every second shape of memory this version removed fails: a plain integer under a
    // `…_bytes` key, the breakdown's `{bytes, plus_minus_bytes}`, an extra key beside
    // the two, a bare `bytes` count, memory under a key that does not say bytes.
    for bad in [
        json!({"requested_bytes": 1}),
        json!({"peak_used_bytes": 125_948_657_664u64}),
        json!({"amount": {"bytes": 1, "plus_minus_bytes": 2}}),
        json!({"x_bytes": {"bytes": 1, "resolution_bytes": 0, "derivation": ""}}),
        json!({"pinned_by": [{"site": "s", "bytes": 5}]}),
        json!({"delta_bytes": {"bytes": 1, "resolution_bytes": -1}}),
        json!({"amount": {"bytes": 1, "resolution_bytes": 0}}),
    ] {
        let mut s = Shapes::default();
        s.walk(&bad, "$");
        assert!(!s.errors.is_empty(), "accepted {bad}");
    }
    let mut s = Shapes::default();
    s.walk(
        &json!({"a": {"requested_bytes": {"bytes": -3, "resolution_bytes": 1}},
                "b": {"requested_bytes": null}}),
        "$",
    );
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.memory_seen, 1);
}

#[test]
fn the_schema_rule_rejects_a_plain_byte_field() {
    let schema = json!({"definitions": {
        "MemoryDoc": {"properties": {"bytes": {}, "resolution_bytes": {}}},
        "Good": {"properties": {"a_bytes": {"$ref": "#/definitions/MemoryDoc"},
            "b_bytes": {"anyOf": [{"$ref": "#/definitions/MemoryDoc"}, {"type": "null"}]}}},
        "Bad": {"properties": {"c_bytes": {"type": "integer"}, "bytes": {"type": "integer"}}}}});
    let errors = schema_errors("t", &schema);
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().all(|e| e.contains("Bad")));
}
