use super::*;

const SGLANG: &str = "server_args=ServerArgs(model_path='synthetic-61L', tp_size=8, pp_size=1, mem_fraction_static=0.9, cuda_graph_max_bs=128, enable_custom_allreduce=False)";

// Shaped on vLLM 0.11's core.py line: unquoted fields, a call, embedded JSON.
const VLLM_BODY: &str = "model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=None, tokenizer='meta-llama/Llama-3.1-8B-Instruct', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=4096, download_dir=None, load_format=auto, tensor_parallel_size=8, pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_fallback=False, disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser=''), observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None), seed=0, served_model_name=meta-llama/Llama-3.1-8B-Instruct, enable_prefix_caching=True, enable_chunked_prefill=True, pooler_config=None, compilation_config={\"level\":3,\"debug_dump_path\":\"\",\"cache_dir\":\"\",\"backend\":\"\",\"custom_ops\":[],\"splitting_ops\":[\"vllm.unified_attention\",\"vllm.unified_attention_with_output\"],\"use_inductor\":true,\"compile_sizes\":[],\"inductor_compile_config\":{\"enable_auto_functionalized_v2\":false},\"cudagraph_mode\":[2,1],\"use_cudagraph\":true,\"cudagraph_capture_sizes\":[512,504,8,4,2,1],\"pass_config\":{},\"max_capture_size\":512,\"local_cache_dir\":null}";

fn v(s: &str) -> PyValue {
    match parse_value(s) {
        Ok(v) => v,
        Err(e) => panic!("{s:?}: {e}"),
    }
}

fn s(x: &str) -> PyValue {
    PyValue::Str(x.into())
}

fn err(s: &str) -> ReprError {
    match parse_value(s) {
        Ok(v) => panic!("{s:?} parsed as {v:?}"),
        Err(e) => e,
    }
}

#[test]
fn sglang_real_line() {
    let body = &SGLANG["server_args=".len()..];
    let PyValue::Call { name, args, kwargs } = v(body) else {
        panic!("not a call");
    };
    assert_eq!(name, "ServerArgs");
    assert!(args.is_empty());
    let keys: Vec<&str> = kwargs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "model_path",
            "tp_size",
            "pp_size",
            "mem_fraction_static",
            "cuda_graph_max_bs",
            "enable_custom_allreduce"
        ]
    );
    assert_eq!(kwargs[0].1, s("synthetic-61L"));
    assert_eq!(kwargs[1].1, PyValue::Int(8));
    assert_eq!(kwargs[3].1, PyValue::Float(0.9));
    assert_eq!(kwargs[5].1, PyValue::Bool(false));
    assert_eq!(v(body).to_python_repr(), body);
}

#[test]
fn sglang_line_with_eight_keys_as_kwargs() {
    let kw = parse_kwargs("model_path='synthetic-61L', tp_size=8, pp_size=1, dp_size=1, mem_fraction_static=0.9, cuda_graph_max_bs=128, attention_backend=None, enable_custom_allreduce=False").unwrap();
    assert_eq!(kw.len(), 8);
    assert_eq!(
        kw[7],
        ("enable_custom_allreduce".into(), PyValue::Bool(false))
    );
}

#[test]
fn vllm_config_line() {
    let kw = parse_kwargs(VLLM_BODY).unwrap();
    assert_eq!(kw.len(), 28);
    let get = |k: &str| {
        kw.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    assert_eq!(get("dtype"), PyValue::Name("torch.bfloat16".into()));
    assert_eq!(get("tokenizer_mode"), PyValue::Name("auto".into()));
    assert_eq!(
        get("served_model_name"),
        PyValue::Name("meta-llama/Llama-3.1-8B-Instruct".into())
    );
    assert_eq!(get("max_seq_len"), PyValue::Int(4096));
    let PyValue::Call { name, kwargs, .. } = get("structured_outputs_config") else {
        panic!()
    };
    assert_eq!(name, "StructuredOutputsConfig");
    assert_eq!(kwargs[4], ("reasoning_parser".into(), s("")));
    let PyValue::Dict(cc) = get("compilation_config") else {
        panic!()
    };
    assert_eq!(cc[0], (s("level"), PyValue::Int(3)));
    assert_eq!(cc[1], (s("debug_dump_path"), s("")));
    assert!(cc.contains(&(s("use_inductor"), PyValue::Bool(true))));
    assert!(cc.contains(&(s("local_cache_dir"), PyValue::None)));
    assert!(cc.contains(&(
        s("cudagraph_mode"),
        PyValue::List(vec![PyValue::Int(2), PyValue::Int(1)])
    )));
}

#[test]
fn kwargs_ignore_trailing_text() {
    let kw = parse_kwargs("a=1, b='x' (and then some)").unwrap();
    assert_eq!(kw, [("a".into(), PyValue::Int(1)), ("b".into(), s("x"))]);
    let kw = parse_kwargs("a=1, this is prose").unwrap();
    assert_eq!(kw.len(), 1);
    assert_eq!(parse_kwargs("").unwrap(), []);
    assert_eq!(parse_kwargs("not kwargs").unwrap_err().offset, 0);
}

#[test]
fn vllm_non_default_args() {
    let d = v("{'model': 'x', 'tensor_parallel_size': 8, 'enable_expert_parallel': True}");
    assert_eq!(
        d,
        PyValue::Dict(vec![
            (s("model"), s("x")),
            (s("tensor_parallel_size"), PyValue::Int(8)),
            (s("enable_expert_parallel"), PyValue::Bool(true)),
        ])
    );
}

#[test]
fn quotes_nested_and_escaped() {
    assert_eq!(v(r#""it's""#), s("it's"));
    assert_eq!(v(r#"'say "hi"'"#), s("say \"hi\""));
    assert_eq!(v(r#"'it\'s'"#), s("it's"));
    assert_eq!(v(r#""a\"b""#), s("a\"b"));
    assert_eq!(v(r#"'both \' and "'"#), s("both ' and \""));
    assert_eq!(v(r"'back\\slash'"), s("back\\slash"));
    assert_eq!(v(r"'a\nb\tc'"), s("a\nb\tc"));
    assert_eq!(v(r"'\x41\x42'"), s("AB"));
    assert_eq!(v(r"'caf\u00e9'"), s("café"));
    assert_eq!(v(r"'\U0001f600'"), s("😀"));
    assert_eq!(v(r"'\q'"), s("\\q"));
    assert_eq!(v(r"r'\n'"), s("\\n"));
    assert_eq!(v(r"b'\x00'"), s("\0"));
    // Quotes of the other kind inside a string do not end it, nor do brackets.
    assert_eq!(
        v(r#"['a]"', "b')"]"#),
        PyValue::List(vec![s("a]\""), s("b')")])
    );
    // Python's own choice of quotes on the way out.
    assert_eq!(s("it's").to_python_repr(), r#""it's""#);
    assert_eq!(s("it's \"x\"").to_python_repr(), "'it\\'s \"x\"'");
    assert_eq!(s("a\\b\n\x01").to_python_repr(), r"'a\\b\n\x01'");
}

#[test]
fn unicode() {
    assert_eq!(v("'héllo ✓ 日本語 😀'"), s("héllo ✓ 日本語 😀"));
    assert_eq!(
        v("{'ключ': 'значение'}").to_python_repr(),
        "{'ключ': 'значение'}"
    );
    // JSON's surrogate pairs join; a lone half becomes U+FFFD rather than an error.
    assert_eq!(v(r#""\ud83d\ude00""#), s("😀"));
    assert_eq!(v(r#""\ud83dx""#), s("\u{fffd}x"));
    assert_eq!(v(r#""\ude00""#), s("\u{fffd}"));
    assert_eq!(v("Größe(ä=1)").to_python_repr(), "Größe(ä=1)");
}

#[test]
fn floats() {
    assert_eq!(v("1e-05"), PyValue::Float(0.00001));
    assert_eq!(v("1e-05"), v("0.00001"));
    assert_eq!(v("0.00001").to_python_repr(), "1e-05");
    assert_eq!(v("-0.5"), PyValue::Float(-0.5));
    assert_eq!(v("inf"), PyValue::Float(f64::INFINITY));
    assert_eq!(v("-inf"), PyValue::Float(f64::NEG_INFINITY));
    assert_eq!(v("Infinity"), PyValue::Float(f64::INFINITY));
    assert!(matches!(v("nan"), PyValue::Float(f) if f.is_nan()));
    assert_eq!(v("nan"), v("nan"));
    assert_eq!(v("[inf, -inf]").to_python_repr(), "[inf, -inf]");
    for (x, py) in [
        (1e-05, "1e-05"),
        (0.9, "0.9"),
        (100.0, "100.0"),
        (1e16, "1e+16"),
        (1.5e-7, "1.5e-07"),
        (123456.789, "123456.789"),
        (0.0001, "0.0001"),
        (-2.5e100, "-2.5e+100"),
        (-0.0, "-0.0"),
    ] {
        assert_eq!(py_float_repr(x), py, "{x}");
        assert_eq!(v(py), PyValue::Float(x));
    }
    assert_eq!(v("1."), PyValue::Float(1.0));
    assert_eq!(v(".5"), PyValue::Float(0.5));
    assert_ne!(v("1"), v("1.0"));
}

#[test]
fn big_ints() {
    assert_eq!(v("9223372036854775807"), PyValue::Int(i64::MAX));
    assert_eq!(v("-9223372036854775808"), PyValue::Int(i64::MIN));
    assert_eq!(
        v("9223372036854775808"),
        PyValue::BigInt("9223372036854775808".into())
    );
    assert_eq!(
        v("-123456789012345678901234567890"),
        PyValue::BigInt("-123456789012345678901234567890".into())
    );
    assert_eq!(v("-42"), PyValue::Int(-42));
    assert_eq!(
        serde_json::to_string(&v("[99999999999999999999, 1]")).unwrap(),
        r#"["99999999999999999999",1]"#
    );
}

#[test]
fn empty_containers_and_tuples() {
    assert_eq!(v("[]"), PyValue::List(vec![]));
    assert_eq!(v("()"), PyValue::Tuple(vec![]));
    assert_eq!(v("{}"), PyValue::Dict(vec![]));
    assert_eq!(v("set()"), PyValue::Set(vec![]));
    assert_eq!(v("set()").to_python_repr(), "set()");
    assert_eq!(v("''"), s(""));
    assert_eq!(
        v("Foo()"),
        PyValue::Call {
            name: "Foo".into(),
            args: vec![],
            kwargs: vec![]
        }
    );
    assert_eq!(v("(1,)"), PyValue::Tuple(vec![PyValue::Int(1)]));
    assert_eq!(v("(1,)").to_python_repr(), "(1,)");
    assert_eq!(v("(1)"), PyValue::Int(1));
    assert_eq!(v("( [ ] , ( ) , { } )").to_python_repr(), "([], (), {})");
}

#[test]
fn trailing_commas() {
    assert_eq!(v("[1, 2,]"), v("[1, 2]"));
    assert_eq!(v("(1, 2,)"), v("(1, 2)"));
    assert_eq!(v("{'a': 1,}"), v("{'a': 1}"));
    assert_eq!(v("{1, 2,}"), v("{1, 2}"));
    assert_eq!(v("Foo(a=1,)"), v("Foo(a=1)"));
    assert_eq!(err("[,]").offset, 1);
    assert_eq!(err("[1,,]").offset, 3);
}

#[test]
fn sets_dicts_calls_names() {
    assert_eq!(
        v("{1, 2}"),
        PyValue::Set(vec![PyValue::Int(1), PyValue::Int(2)])
    );
    assert_eq!(v("{2, 1}"), v("{1, 2}"));
    assert_eq!(v("{'b': 1, 'a': 2}"), v("{'a': 2, 'b': 1}"));
    assert_eq!(
        v("{(1, 2): 'x', 3: None}").to_python_repr(),
        "{(1, 2): 'x', 3: None}"
    );
    assert_eq!(
        v("Foo(a=1, b=[2])"),
        PyValue::Call {
            name: "Foo".into(),
            args: vec![],
            kwargs: vec![
                ("a".into(), PyValue::Int(1)),
                ("b".into(), PyValue::List(vec![PyValue::Int(2)]))
            ]
        }
    );
    assert_eq!(
        v("mod.Foo('pos', 2, k=Bar(x=None))").to_python_repr(),
        "mod.Foo('pos', 2, k=Bar(x=None))"
    );
    assert_eq!(v("torch.bfloat16"), PyValue::Name("torch.bfloat16".into()));
    assert_eq!(
        v("<ModelImpl.AUTO: 'auto'>"),
        PyValue::Name("<ModelImpl.AUTO: 'auto'>".into())
    );
    assert_eq!(
        v("[<Weird: '>'>, <function <lambda> at 0x7f>]"),
        PyValue::List(vec![
            PyValue::Name("<Weird: '>'>".into()),
            PyValue::Name("<function <lambda> at 0x7f>".into())
        ])
    );
    assert_eq!(v("[...]").to_python_repr(), "[...]");
    assert_eq!(
        v("[None, True, False]").to_python_repr(),
        "[None, True, False]"
    );
    assert_eq!(v("[null, true, false]"), v("[None, True, False]"));
}

#[test]
fn error_offsets_and_kinds() {
    let e = err("[1, 2");
    assert_eq!(
        (e.offset, e.kind, e.found),
        (5, ReprErrorKind::Truncated, None)
    );
    assert!(e.to_string().contains("byte 5"), "{e}");
    let e = err("[1 2]");
    assert_eq!(
        (e.offset, e.kind, e.found),
        (3, ReprErrorKind::Syntax, Some('2'))
    );
    assert_eq!(e.expected, "`,` or `]`");
    assert_eq!(err("'abc").kind, ReprErrorKind::Truncated);
    assert_eq!(err("'abc").offset, 4);
    assert_eq!(err(r"'\x4").kind, ReprErrorKind::Truncated);
    assert_eq!(err(r"'\x4g'").offset, 4);
    assert_eq!(err("<Enum.A: 'a'").kind, ReprErrorKind::Truncated);
    assert_eq!(err("{'a' 1}").offset, 5);
    assert_eq!(err("1 2").offset, 2);
    assert_eq!(err("").kind, ReprErrorKind::Truncated);
    assert_eq!(err("@").kind, ReprErrorKind::Syntax);
    assert_eq!(err("[1abc]").offset, 2);
    assert_eq!(err("Foo(a=1").kind, ReprErrorKind::Truncated);
    assert_eq!(err("  [1,").offset, 5);
}

#[test]
fn deep_nesting_is_an_error_not_an_overflow() {
    for (open, close) in [
        ("[", "]"),
        ("(", ")"),
        ("{", "}"),
        ("F(", ")"),
        ("{1: ", "}"),
    ] {
        let deep = format!("{}1{}", open.repeat(10_000), close.repeat(10_000));
        let e = err(&deep);
        assert_eq!(e.kind, ReprErrorKind::TooDeep, "{open}");
        assert_eq!(e.offset, MAX_DEPTH * open.len(), "{open}");
        let ok = format!("{}1{}", open.repeat(MAX_DEPTH), close.repeat(MAX_DEPTH));
        assert!(parse_value(&ok).is_ok(), "{open}");
        let kw = format!("a={}1{}", open.repeat(10_000), close.repeat(10_000));
        assert_eq!(parse_kwargs(&kw).unwrap_err().kind, ReprErrorKind::TooDeep);
        assert!(parse_kwargs_lenient(&kw).is_err());
    }
    assert_eq!(err(&"[".repeat(10_000)).kind, ReprErrorKind::TooDeep);
    let mixed = format!("{}1{}", "[{0: F(a=(".repeat(70), ",)))}]".repeat(70));
    assert_eq!(err(&mixed).kind, ReprErrorKind::TooDeep);
}

/// Debug builds spend about 2.3 KiB of stack per level on the costliest shape (calls);
/// a full-depth parse must fit in 1 MiB, half a default thread's stack, so that
/// callers on worker threads need not think about it.
#[test]
fn full_depth_fits_in_one_mebibyte_of_stack() {
    let run = || {
        for (open, close) in [("[", "]"), ("{", "}"), ("{1: ", "}"), ("F(a=", ")")] {
            let ok = format!("{}1{}", open.repeat(MAX_DEPTH), close.repeat(MAX_DEPTH));
            assert!(parse_value(&ok).is_ok());
            let deep = format!("{}1", open.repeat(10_000));
            assert_eq!(err(&deep).kind, ReprErrorKind::TooDeep);
            let kw = format!("a={ok}");
            assert!(parse_kwargs(&kw).is_ok());
        }
    };
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
    assert!(parse_value(&"<".repeat(100_000)).is_err());
}

#[test]
fn truncated_sglang_line_at_every_offset() {
    let body = &SGLANG["server_args=".len()..];
    let PyValue::Call { kwargs: full, .. } = v(body) else {
        panic!()
    };
    for cut in 0..body.len() {
        let part = &body[..cut];
        let l = parse_call_lenient(part).unwrap();
        assert!(l.truncated);
        assert_eq!(l.kwargs[..], full[..l.kwargs.len()], "{part:?}");
        // A pair counts once its comma is printed, not before.
        let commas = part.matches(',').count();
        assert_eq!(l.kwargs.len(), commas, "{part:?}");
        if cut < "ServerArgs(".len() {
            // `ServerAr` alone is a fine bare name.
            continue;
        }
        let e = parse_value(part).unwrap_err();
        assert_eq!(e.kind, ReprErrorKind::Truncated, "{part:?}: {e}");
        assert_eq!(e.offset, cut, "{part:?}");
    }
    let l = parse_call_lenient(body).unwrap();
    assert!(!l.truncated);
    assert_eq!(l.kwargs, full);
    assert_eq!(l.consumed, body.len());
}

#[test]
fn truncated_vllm_line_at_every_offset() {
    let full = parse_kwargs(VLLM_BODY).unwrap();
    for cut in 0..=VLLM_BODY.len() {
        let part = &VLLM_BODY[..cut];
        let _ = parse_kwargs(part);
        let l = parse_kwargs_lenient(part).unwrap_or_else(|e| panic!("{part:?}: {e}"));
        // Every pair before the last one read is as printed in full.
        let n = l.kwargs.len();
        if n > 1 {
            assert_eq!(l.kwargs[..n - 1], full[..n - 1], "{part:?}");
        }
        for (k, _) in &l.kwargs {
            assert!(full.iter().any(|(f, _)| f == k), "{part:?}");
        }
    }
    assert!(!parse_kwargs_lenient(VLLM_BODY).unwrap().truncated);
    let cut = &VLLM_BODY[..VLLM_BODY.find("\"level\":3").unwrap() + 4];
    let l = parse_kwargs_lenient(cut).unwrap();
    assert!(l.truncated);
    assert_eq!(l.kwargs.len(), 27);
    let e = parse_kwargs(cut).unwrap_err();
    assert_eq!((e.kind, e.offset), (ReprErrorKind::Truncated, cut.len()));
    assert!(parse_kwargs_lenient("a=1, b").unwrap().truncated);
    assert!(parse_kwargs_lenient("a=1, ").unwrap().truncated);
    assert!(parse_kwargs_lenient("a=1, b=").unwrap().truncated);
    assert!(parse_kwargs_lenient("a=[1 2]").is_err());
}

#[test]
fn truncated_unicode_at_every_char_boundary() {
    let line = "Cfg(name='café ✓ 😀', d={\"k\": \"\\u00e9\"}, t=(1,), e=<E.A: 'ä'>)";
    assert!(parse_value(line).is_ok());
    for cut in (4..line.len()).filter(|c| line.is_char_boundary(*c)) {
        let e = parse_value(&line[..cut]).unwrap_err();
        assert_eq!(e.kind, ReprErrorKind::Truncated, "{:?}", &line[..cut]);
        let _ = parse_call_lenient(&line[..cut]);
    }
}

/// A fixed-seed walk over the grammar's characters: nothing may panic, and whatever
/// parses must come back the same through its own repr.
#[test]
fn garbage_never_panics_and_reprs_round_trip() {
    const ALPHABET: &[&str] = &[
        "[", "]", "(", ")", "{", "}", ",", ":", "'", "\"", "\\", "=", "<", ">", ".", "-", "+", "0",
        "1", "9", "e", "x", "u", "inf", "nan", "None", "True", "a", "F", " ", "\n", "é", "😀",
        "\\x4", "\\u00", "1e-05", "set()", "b'", "...",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut parsed = 0;
    for _ in 0..30_000 {
        let len = (next() % 24) as usize;
        let text: String = (0..len)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
            .collect();
        let _ = parse_kwargs(&text);
        let _ = parse_kwargs_lenient(&text);
        let _ = parse_call_lenient(&text);
        let _ = parse_value_prefix(&text);
        if let Ok(val) = parse_value(&text) {
            parsed += 1;
            let again = parse_value(&val.to_python_repr());
            assert_eq!(again.as_ref(), Ok(&val), "{text:?}");
            let _ = serde_json::to_string(&val).unwrap();
        }
    }
    assert!(parsed > 100, "{parsed}");
}

#[test]
fn serializes_as_natural_json() {
    let j = |s: &str| serde_json::to_string(&v(s)).unwrap();
    assert_eq!(j("None"), "null");
    assert_eq!(j("(1, 'a', True)"), r#"[1,"a",true]"#);
    assert_eq!(j("{1, 2}"), "[1,2]");
    assert_eq!(j("{'a': 1.5, 'b': [None]}"), r#"{"a":1.5,"b":[null]}"#);
    assert_eq!(j("{1: 'x', 'y': 2}"), r#"[[1,"x"],["y",2]]"#);
    assert_eq!(
        j("Foo(1, a=torch.bfloat16)"),
        r#"{"call":"Foo","args":[1],"kwargs":{"a":"torch.bfloat16"}}"#
    );
    assert_eq!(
        j("[inf, -inf, nan, 1e-05]"),
        r#"["inf","-inf","nan",0.00001]"#
    );
    assert_eq!(
        j("<ModelImpl.AUTO: 'auto'>"),
        r#""<ModelImpl.AUTO: 'auto'>""#
    );
}
