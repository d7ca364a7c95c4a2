//! `rankscope export --prometheus`, read back with a parser written from the text
//! exposition format's rules (Prometheus "Exposition formats", text format 0.0.4):
//! metric and label name syntax, label value escapes, HELP/TYPE once per family and
//! before its samples, families not interleaved, no repeated series.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use assert_cmd::Command;

#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn is_metric_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    !s.starts_with("__")
        && c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse().map_err(|_| format!("bad value {s:?}")),
    }
}

/// `{a="x",b="y\"z"}` → map; returns the rest of the line after `}`.
fn parse_labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    let mut rest = s.strip_prefix('{').ok_or("no {")?;
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((labels, r));
        }
        let eq = rest.find('=').ok_or("label without =")?;
        let name = &rest[..eq];
        if !is_label_name(name) {
            return Err(format!("bad label name {name:?}"));
        }
        rest = rest[eq + 1..]
            .strip_prefix('"')
            .ok_or("label value not quoted")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("bad escape {other:?}")),
                },
                Some((_, '\n')) => return Err("raw newline in label value".into()),
                Some((_, c)) => value.push(c),
                None => return Err("unterminated label value".into()),
            }
        };
        if labels.insert(name.to_string(), value).is_some() {
            return Err(format!("label {name} twice"));
        }
        rest = &rest[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

fn parse(text: &str) -> Result<Vec<Sample>, String> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut helps: BTreeSet<String> = BTreeSet::new();
    let mut finished: BTreeSet<String> = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut series: BTreeSet<String> = BTreeSet::new();
    let mut samples = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line}", n + 1);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix("# ") {
            let mut parts = c.splitn(3, ' ');
            let (kw, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let rest = parts.next().unwrap_or("");
            match kw {
                "HELP" if !helps.insert(name.to_string()) => {
                    return Err(at("second HELP".into()));
                }
                "TYPE" => {
                    if samples.iter().any(|s: &Sample| s.name == name) {
                        return Err(at("TYPE after samples".into()));
                    }
                    let ok = ["counter", "gauge", "histogram", "summary", "untyped"];
                    if !ok.contains(&rest) {
                        return Err(at(format!("bad type {rest}")));
                    }
                    if types.insert(name.to_string(), rest.to_string()).is_some() {
                        return Err(at("second TYPE".into()));
                    }
                }
                _ => {}
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| at("no value".into()))?;
        let name = &line[..name_end];
        if !is_metric_name(name) {
            return Err(at(format!("bad metric name {name:?}")));
        }
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..]).map_err(at)?
        } else {
            (BTreeMap::new(), &line[name_end..])
        };
        let mut fields = rest.split_whitespace();
        let value = parse_value(fields.next().unwrap_or("")).map_err(at)?;
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().map_err(|_| at("bad timestamp".into()))?;
        }
        if current.as_deref() != Some(name) {
            if finished.contains(name) {
                return Err(at("family interleaved with another".into()));
            }
            if let Some(c) = current.take() {
                finished.insert(c);
            }
            current = Some(name.to_string());
        }
        if !types.contains_key(name) {
            return Err(at("sample without TYPE".into()));
        }
        if !series.insert(format!("{name}{labels:?}")) {
            return Err(at("repeated series".into()));
        }
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    Ok(samples)
}

fn export(run: &str) -> String {
    let out = Command::cargo_bin("rankscope")
        .expect("binary built")
        .args(["export", run, "--prometheus"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn find<'a>(s: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Vec<&'a Sample> {
    s.iter()
        .filter(|x| x.name == name)
        .filter(|x| {
            labels
                .iter()
                .all(|(k, v)| x.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .collect()
}

#[test]
fn baseline_metrics_parse_and_carry_the_figures() {
    let text = export("samples/tp8-baseline");
    let s = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    // The identity's name: the directory's name, however the path was typed.
    let run = "tp8-baseline";
    let absolute = std::fs::canonicalize("samples/tp8-baseline").expect("sample");
    for typed in ["samples/tp8-baseline/", absolute.to_str().expect("UTF-8")] {
        let other = export(typed);
        assert_eq!(other, text, "{typed} gives other series");
    }
    assert_eq!(
        find(&s, "rankscope_run_ready", &[("run", run)])[0].value,
        1.0
    );
    assert_eq!(find(&s, "rankscope_run_ranks", &[])[0].value, 8.0);
    let kv = find(&s, "rankscope_kv_tokens", &[("run", run)]);
    assert_eq!(kv.len(), 8);
    assert!(kv.iter().all(|k| k.value == 91_141.0));
    let mem = find(
        &s,
        "rankscope_phase_memory_bytes",
        &[
            ("rank", "TP1"),
            ("phase", "dist_init"),
            ("figure", "mem_usage"),
        ],
    );
    assert_eq!(mem.len(), 1);
    assert_eq!(mem[0].value, 644_245_094.0);
    let d = find(
        &s,
        "rankscope_phase_duration_seconds",
        &[("phase", "weight_load")],
    );
    assert_eq!(d.len(), 8);
    assert!(d.iter().all(|x| x.value >= 0.0));
    let failed = find(&s, "rankscope_rank_failed", &[]);
    assert_eq!(failed.len(), 8);
    assert!(failed.iter().all(|f| f.value == 0.0));
    for family in [
        "rankscope_phase_duration_seconds",
        "rankscope_phase_memory_bytes",
        "rankscope_kv_tokens",
        "rankscope_rank_failed",
        "rankscope_run_ready",
    ] {
        assert!(text.contains(&format!("# HELP {family} ")), "{family} HELP");
        assert!(
            text.contains(&format!("# TYPE {family} gauge")),
            "{family} TYPE"
        );
    }
}

#[test]
fn failed_ranks_say_where_and_how() {
    let s = parse(&export("samples/tp8-custom-ar")).expect("parses");
    assert_eq!(find(&s, "rankscope_run_ready", &[])[0].value, 0.0);
    let failed = find(
        &s,
        "rankscope_rank_failed",
        &[("phase", "cuda_graph"), ("kind", "oom")],
    );
    assert_eq!(failed.len(), 8);
    assert!(failed.iter().all(|f| f.value == 1.0));
}

#[test]
fn label_values_are_escaped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let odd = dir.path().join("run \"a\\b\"\nc");
    std::fs::create_dir(&odd).expect("mkdir");
    std::fs::copy("samples/tp8-baseline/server.log", odd.join("server.log")).expect("copy");
    let name = odd.display().to_string();
    let text = export(&name);
    let s = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let ready = find(&s, "rankscope_run_ready", &[]);
    // Names are shown without control characters (the newline goes, as an escape
    // sequence would); quotes and backslashes are escaped. The label is the identity's
    // name, the directory's own.
    let shown = "run \"a\\b\"c".to_string();
    assert_eq!(ready[0].labels.get("run"), Some(&shown));
}

#[test]
fn the_parser_rejects_what_the_format_forbids() {
    assert!(parse("# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n").is_err());
    assert!(parse("a 1\n").is_err());
    assert!(parse("# TYPE a gauge\na{x=\"\\q\"} 1\n").is_err());
    assert!(parse("# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x=\"2\"} 1\n").is_err());
    assert!(parse("# TYPE a gauge\na{__x=\"1\"} 1\n").is_err());
    assert!(parse("# TYPE a gauge\na{x=\"1\"} one\n").is_err());
    assert!(parse("# TYPE a gauge\na{x=\"q\\\"\\\\\\n\"} 1 1700000000000\n").is_ok());
}
