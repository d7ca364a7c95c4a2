use super::*;

#[test]
fn allocator_settings_compared_key_by_key() {
    let a = serde_json::json!({"expandable_segments": false, "max_split_size": -1,
        "roundup_power2_divisions": {"1": 0, "64": 0}, "PYTORCH_CUDA_ALLOC_CONF": ""});
    let b = serde_json::json!({"expandable_segments": true, "max_split_size": -1,
        "roundup_power2_divisions": {"1": 0, "64": 4},
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "per_process_memory_fraction": 0.5});
    let d = diff_allocator_settings(&a, &b);
    let keys: Vec<&str> = d.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "PYTORCH_CUDA_ALLOC_CONF",
            "expandable_segments",
            "per_process_memory_fraction",
            "roundup_power2_divisions.64"
        ]
    );
    assert_eq!(d[1].baseline.as_deref(), Some("false"));
    assert_eq!(d[1].candidate.as_deref(), Some("true"));
    assert_eq!(d[2].baseline, None);
    assert!(diff_allocator_settings(&a, &a).is_empty());
}

// First lines of fixtures/gpu/tp8_baseline/server.log and tp8_custom_ar/server.log.
const BASELINE: &str = "[2026-11-29 09:18:09] server_args=ServerArgs(model_path='synthetic-61L', tp_size=8, pp_size=1, mem_fraction_static=0.9, cuda_graph_max_bs=128, enable_custom_allreduce=False)";
const CUSTOM_AR: &str = "[2026-11-29 09:18:30] server_args=ServerArgs(model_path='synthetic-61L', tp_size=8, pp_size=1, mem_fraction_static=0.9, cuda_graph_max_bs=128, enable_custom_allreduce=True)";

const VLLM: &str = "(EngineCore_DP0 pid=4242) INFO 10-15 12:00:00 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='x', speculative_config=None, tokenizer='x', dtype=torch.bfloat16, max_seq_len=4096, tensor_parallel_size=8, disable_custom_all_reduce=False, served_model_name=x, compilation_config={\"level\":3,\"debug_dump_path\":\"\",\"use_cudagraph\":true}";

fn cfg(line: &str) -> Config {
    Config::from_line(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[test]
fn real_fixture_lines_differ_in_custom_allreduce_only() {
    let (a, b) = (cfg(BASELINE), cfg(CUSTOM_AR));
    assert_eq!(a.source.syntax, ConfigSyntax::PythonCall);
    assert_eq!(a.source.marker, "server_args=");
    assert_eq!(a.entries.len(), 6);
    let d = diff(&a, &b);
    assert_eq!(
        d.changed,
        [Change {
            key: "enable_custom_allreduce".into(),
            old: PyValue::Bool(false),
            new: PyValue::Bool(true),
        }]
    );
    assert!(d.added.is_empty() && d.removed.is_empty());
    assert!(diff(&a, &a).is_empty());
}

#[test]
fn diff_orders_and_kinds() {
    let a = cfg("server_args=ServerArgs(a=1, b=2, c=3, d=4, e=5)");
    let b = cfg("server_args=ServerArgs(z=0, e=50, c=3, b=20, y=9)");
    let d = diff(&a, &b);
    let changed: Vec<&str> = d.changed.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(changed, ["b", "e"]);
    let removed: Vec<&str> = d.removed.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(removed, ["a", "d"]);
    let added: Vec<&str> = d.added.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(added, ["z", "y"]);
    assert_eq!(d.changed[1].old, PyValue::Int(5));
    assert_eq!(d.changed[1].new, PyValue::Int(50));
}

#[test]
fn float_equality_is_exact_but_spelling_free() {
    let a = cfg("server_args=ServerArgs(eps=1e-05, m=0.9, x=nan, d={'a': 1, 'b': 2})");
    let b = cfg("server_args=ServerArgs(eps=0.00001, m=0.90, x=nan, d={'b': 2, 'a': 1})");
    assert!(diff(&a, &b).is_empty());
    let c = cfg("server_args=ServerArgs(eps=1.00001e-05, m=0.9, x=nan, d={'a': 1, 'b': 2})");
    let d = diff(&a, &c);
    assert_eq!(d.changed.len(), 1);
    assert_eq!(d.changed[0].key, "eps");
    let e = cfg("server_args=ServerArgs(eps=1e-05, m=1, x=nan, d={'a': 1, 'b': 2})");
    assert_eq!(diff(&a, &e).changed[0].key, "m");
}

#[test]
fn vllm_engine_config_line() {
    let c = cfg(VLLM);
    assert_eq!(c.source.syntax, ConfigSyntax::PythonKwargs);
    assert_eq!(c.entries.len(), 9);
    assert_eq!(
        c.get("dtype"),
        Some(&PyValue::Name("torch.bfloat16".into()))
    );
    assert_eq!(c.get("served_model_name"), Some(&PyValue::Name("x".into())));
    let other = VLLM.replace(
        "disable_custom_all_reduce=False",
        "disable_custom_all_reduce=True",
    );
    let d = diff(&c, &cfg(&other));
    assert_eq!(d.changed.len(), 1);
    assert_eq!(d.changed[0].key, "disable_custom_all_reduce");
}

#[test]
fn vllm_non_default_args_line() {
    let c = cfg("INFO 10-15 12:00:00 [utils.py:233] non-default args: {'model': 'x', 'tensor_parallel_size': 8, 'disable_log_stats': True}");
    assert_eq!(c.source.syntax, ConfigSyntax::PythonDict);
    assert_eq!(c.get("tensor_parallel_size"), Some(&PyValue::Int(8)));
    assert!(matches!(
        Config::from_line("non-default args: ['x']"),
        Err(ConfigError::Shape { .. })
    ));
}

#[test]
fn errors_point_into_the_line() {
    assert_eq!(
        Config::from_line("[09:18:12 TP5] Init torch distributed begin."),
        Err(ConfigError::NotAConfigLine)
    );
    let cut = &BASELINE[..BASELINE.find("cuda_graph").unwrap() + 4];
    match Config::from_line(cut) {
        Err(ConfigError::Repr(e)) => {
            assert_eq!(
                e.kind,
                crate::model::config::pyrepr::ReprErrorKind::Truncated
            );
            assert_eq!(e.offset, cut.len());
        }
        other => panic!("{other:?}"),
    }
    let bad = "x server_args=ServerArgs(a=[1 2])";
    match Config::from_line(bad) {
        Err(ConfigError::Repr(e)) => assert_eq!(&bad[e.offset..], "2])"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Config::from_line("server_args=ServerArgs('pos')"),
        Err(ConfigError::Shape { .. })
    ));
}

#[test]
fn lenient_salvages_cut_lines() {
    let cut = &BASELINE[..BASELINE.find("cuda_graph").unwrap() + 4];
    let p = Config::from_line_lenient(cut).unwrap();
    assert!(p.truncated);
    assert_eq!(p.config.entries.len(), 4);
    let d = diff(&cfg(BASELINE), &p.config);
    assert_eq!(d.removed.len(), 2);
    assert!(d.changed.is_empty());
    let whole = Config::from_line_lenient(BASELINE).unwrap();
    assert!(!whole.truncated);
    for n in (0..=BASELINE.len()).filter(|n| BASELINE.is_char_boundary(*n)) {
        let _ = Config::from_line(&BASELINE[..n]);
        let _ = Config::from_line_lenient(&BASELINE[..n]);
        let _ = Config::from_line(&VLLM[..n.min(VLLM.len())]);
        let _ = Config::from_line_lenient(&VLLM[..n.min(VLLM.len())]);
    }
}

// A launcher's `Args { … }` (TGI's wording, our values), with Some/None, a nested
// enum variant, a list and an escaped string.
const RUST_ARGS: &str = "2026-04-02T08:15:01.204118Z  INFO text_generation_launcher: Args { model_id: \"/models/heron-13b\", revision: None, sharded: Some(true), num_shard: Some(2), quantize: Some(Awq), max_batch_prefill_tokens: Some(8192), cuda_memory_fraction: 0.95, cuda_graphs: Some([1, 2, 4]), hostname: \"a\\\"b\", json_output: false }";

#[test]
fn rust_debug_structs_read_as_fields() {
    let rule = ConfigRule {
        grammar: "launcher".into(),
        marker: "Args ".into(),
        syntax: ConfigSyntax::RustDebug,
        escaped: None,
    };
    let read = |line: &str, lenient: bool| Config::parse(line, [&rule].into_iter(), lenient);
    let cfg = |line: &str| {
        read(line, false)
            .map(|p| p.config)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let c = cfg(RUST_ARGS);
    assert_eq!(c.source.syntax, ConfigSyntax::RustDebug);
    // Ten fields in the line, counted by hand.
    assert_eq!(c.entries.len(), 10);
    assert_eq!(
        c.get("model_id"),
        Some(&PyValue::Str("/models/heron-13b".into()))
    );
    assert_eq!(c.get("revision"), Some(&PyValue::None));
    assert_eq!(c.get("sharded"), Some(&PyValue::Bool(true)));
    assert_eq!(c.get("num_shard"), Some(&PyValue::Int(2)));
    assert_eq!(c.get("quantize"), Some(&PyValue::Name("Awq".into())));
    assert_eq!(c.get("cuda_memory_fraction"), Some(&PyValue::Float(0.95)));
    assert_eq!(
        c.get("cuda_graphs"),
        Some(&PyValue::List(vec![
            PyValue::Int(1),
            PyValue::Int(2),
            PyValue::Int(4)
        ]))
    );
    assert_eq!(c.get("hostname"), Some(&PyValue::Str("a\"b".into())));
    let other = RUST_ARGS.replace("num_shard: Some(2)", "num_shard: Some(4)");
    let d = diff(&c, &cfg(&other));
    assert_eq!(d.changed.len(), 1);
    assert_eq!(d.changed[0].key, "num_shard");
    // Cut inside `max_batch_prefill_tokens`: the five fields before it survive.
    let cut = &RUST_ARGS[..RUST_ARGS.find("Some(8192)").unwrap() + 7];
    let p = read(cut, true).unwrap();
    assert!(p.truncated);
    assert_eq!(p.config.entries.len(), 5);
    assert!(read(cut, false).is_err());
    for n in (0..=RUST_ARGS.len()).filter(|n| RUST_ARGS.is_char_boundary(*n)) {
        let _ = read(&RUST_ARGS[..n], true);
        let _ = read(&RUST_ARGS[..n], false);
    }
}

#[test]
fn finds_the_config_among_log_lines() {
    let log = [
        "[2026-11-29 09:18:12 TP5] Init torch distributed begin.",
        BASELINE,
        CUSTOM_AR,
    ];
    let found = Config::find_in_lines(log).unwrap().unwrap();
    assert_eq!(found.config, cfg(BASELINE));
    assert!(Config::find_in_lines(["nothing here"]).is_none());
}

#[test]
fn a_pretty_printed_rust_debug_reads_with_nested_keys_dotted() {
    // quillserve's `{:#?}` (tests/fixtures/made-up-server-6/baseline/launcher.log:2-23),
    // its lines joined without a separator as the scan joins a record's lines.
    let rule = ConfigRule {
        grammar: "quillserve".into(),
        marker: "opts=".into(),
        syntax: ConfigSyntax::RustDebug,
        escaped: None,
    };
    let lines = [
        "resolved options\" opts=QuillOpts {",
        "    max_batch: 256,",
        "    seed: Some(",
        "        7,",
        "    ),",
        "    sched: SchedOpts {",
        "        policy: Fcfs,",
        "        max_prefill_tokens: 16384,",
        "    },",
        "    quant: Some(Awq { bits: 4 }),",
        "    port: 8300,",
        "}",
    ];
    let c = Config::parse(&lines.concat(), [&rule].into_iter(), false)
        .unwrap_or_else(|e| panic!("{e}"))
        .config;
    let keys: Vec<&str> = c.entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "max_batch",
            "seed",
            "sched.policy",
            "sched.max_prefill_tokens",
            "quant",
            "port"
        ]
    );
    assert_eq!(c.get("seed"), Some(&PyValue::Int(7)));
    assert_eq!(c.get("sched.policy"), Some(&PyValue::Name("Fcfs".into())));
    // A struct inside `Some(…)` is one optional value.
    assert!(matches!(c.get("quant"), Some(PyValue::Call { .. })));
}

/// A `[[config]]` rule of a JSON-lines server whose configuration is inside the `msg`
/// string (`escaped = "json"`).
fn escaped_rule(marker: &str, syntax: ConfigSyntax) -> ConfigRule {
    ConfigRule {
        grammar: "cinderbox".into(),
        marker: marker.into(),
        syntax,
        escaped: Some(ConfigEscape::Json),
    }
}

#[test]
fn a_rust_debug_inside_a_json_string_reads_unescaped() {
    // Our values; the JSON record goes on after the string (`,"pid":7}`).
    let line = r#"{"t":"08:00:00","msg":"args: CinderArgs { model: \"/m/cinder-7b\", tag: \"a\\\\b\", max_batch: 32, attn: \"flash\" }","pid":7}"#;
    let rule = escaped_rule("args: ", ConfigSyntax::RustDebug);
    let c = Config::parse(line, [&rule].into_iter(), false)
        .unwrap_or_else(|e| panic!("{e}"))
        .config;
    let keys: Vec<&str> = c.entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["model", "tag", "max_batch", "attn"]);
    assert_eq!(c.get("model"), Some(&PyValue::Str("/m/cinder-7b".into())));
    // JSON's `\\\\` is Rust's `\\`, one backslash in the value.
    assert_eq!(c.get("tag"), Some(&PyValue::Str("a\\b".into())));
    assert_eq!(c.get("attn"), Some(&PyValue::Str("flash".into())));
    // Without the option the first escaped quote stops it, at the line's byte 49:
    // `{"t":"08:00:00","msg":"` is 23 bytes, `args: ` 6, `CinderArgs { model: ` 20.
    let plain = ConfigRule {
        escaped: None,
        ..rule.clone()
    };
    let e = Config::parse(line, [&plain].into_iter(), false).unwrap_err();
    assert_eq!(e.offset(), Some(49));
    assert_eq!(&line[49..51], "\\\"");
}

#[test]
fn python_dict_and_call_inside_a_json_string_read_unescaped() {
    // Python's repr of `C:\tok` is `'C:\\tok'`, which JSON escapes again: `'C:\\\\tok'`.
    let dict =
        r#"{"msg":"overrides: {'tokenizer': 'C:\\\\tok', 'note': 'say \"hi\"', 'max_len': 4096}"}"#;
    let rule = escaped_rule("overrides: ", ConfigSyntax::PythonDict);
    let c = Config::parse(dict, [&rule].into_iter(), false)
        .unwrap_or_else(|e| panic!("{e}"))
        .config;
    assert_eq!(c.get("tokenizer"), Some(&PyValue::Str("C:\\tok".into())));
    assert_eq!(c.get("note"), Some(&PyValue::Str("say \"hi\"".into())));
    assert_eq!(c.get("max_len"), Some(&PyValue::Int(4096)));
    assert_eq!(c.entries.len(), 3);

    // A string holding `'` is repr'd in double quotes, escaped inside the JSON string.
    let call = r#"{"msg":"launch: Namespace(chat_template=\"it's\", tp=2)"}"#;
    let rule = escaped_rule("launch: ", ConfigSyntax::PythonCall);
    let c = Config::parse(call, [&rule].into_iter(), false)
        .unwrap_or_else(|e| panic!("{e}"))
        .config;
    assert_eq!(c.get("chat_template"), Some(&PyValue::Str("it's".into())));
    assert_eq!(c.get("tp"), Some(&PyValue::Int(2)));
    assert_eq!(c.entries.len(), 2);
}

#[test]
fn an_error_in_an_escaped_configuration_names_the_byte_of_the_line() {
    // `;` where `,` belongs. In the line: `{"msg":"` 8 bytes, `args: ` 6, then
    // `A { m: \"/x\"` 13 bytes (two escaped quotes, 4 bytes): `;` is byte 27. In the
    // unescaped text it is byte 11; the error names the line's.
    let line = r#"{"msg":"args: A { m: \"/x\"; n: 2 }"}"#;
    assert_eq!(&line[27..28], ";");
    let rule = escaped_rule("args: ", ConfigSyntax::RustDebug);
    let e = Config::parse(line, [&rule].into_iter(), false).unwrap_err();
    assert_eq!(e.offset(), Some(27));
    assert!(
        e.to_string()
            .starts_with("at byte 27: expected a Rust Debug struct"),
        "{e}"
    );
    // A string cut before its closing quote (the line was cut) is read to its end, and
    // leniently gives the settings before the cut.
    let cut = r#"{"msg":"args: A { m: \"/x\", n: 2, o: \"ab"#;
    let p = Config::parse(cut, [&rule].into_iter(), true).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.truncated);
    let keys: Vec<&str> = p.config.entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["m", "n"]);
}
