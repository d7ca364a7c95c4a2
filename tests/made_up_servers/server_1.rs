//! A server of our own making, read from one grammar file and nothing else
//! (`tests/fixtures/made-up-server/pagesrv.toml`): it prints no line when CUDA graph
//! capture begins — the line that ends the KV pool's sizing begins it (`then`) — and its
//! out-of-memory line carries the phase from the grammar (`phase` on a failure event) —
//! and it counts its KV pool in pages, a figure the grammar declares (`[[figure]]
//! kv_pages`). Every expected value is read off `run/*.log` and `baseline/*.log` by hand.

use assert_cmd::Command;

const DIR: &str = "tests/fixtures/made-up-server";

/// `rankscope --grammar GRAMMAR ARGS…`: its exit code and standard output.
fn run_with(grammar: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args(["--grammar", grammar])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty() || out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn summary_json() -> serde_json::Value {
    let (code, out) = run_with(
        &format!("{DIR}/pagesrv.toml"),
        &["summary", "--json", &format!("{DIR}/run")],
    );
    // A failed run exits 1 with its document.
    assert!(matches!(code, Some(0 | 1)), "{out}");
    serde_json::from_str(&out).unwrap()
}

/// `grammars check` on pagesrv.toml edited by `edit`: its exit code and standard error.
fn check_edited(edit: impl Fn(String) -> String) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let grammar = edit(std::fs::read_to_string(format!("{DIR}/pagesrv.toml")).unwrap());
    let path = dir.path().join("edited.toml");
    std::fs::write(&path, grammar).unwrap();
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args(["grammars", "check", path.to_str().unwrap()])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_grammar_checks() {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args(["grammars", "check", &format!("{DIR}/pagesrv.toml")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_failure_in_a_phase_with_no_begin_line_is_placed_in_it() {
    let doc = summary_json();
    let run = &doc["run"];
    let ranks = run["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    // TP0 ran out of memory at 10:00:09, three seconds after its page pool was ready
    // (10:00:06), the line that begins capture; TP1 likewise at 10:00:10.
    for (r, rank) in ranks.iter().enumerate() {
        assert_eq!(rank["rank"], format!("TP{r}"), "{rank}");
        assert_eq!(rank["outcome"], "failed", "{rank}");
        assert_eq!(rank["failure"]["kind"], "oom", "{rank}");
        assert_eq!(rank["failure"]["phase"], "cuda_graph", "{rank}");
    }
    // 512.00 MiB asked for, 96.00 MiB free (rank0.log line 6).
    let f = &ranks[0]["failure"];
    assert_eq!(f["fields"]["requested_bytes"]["bytes"], 512u64 << 20);
    assert_eq!(f["fields"]["free_bytes"]["bytes"], 96u64 << 20);
    assert_eq!(f["line"], 6);
    // The phase table has a cuda_graph row, begun by the page-pool line on both ranks
    // and finished by neither.
    let phases = run["phases"].as_array().unwrap();
    let names: Vec<&str> = phases
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "launch",
            "dist_init",
            "weight_load",
            "kv_cache",
            "cuda_graph"
        ],
        "{phases:?}"
    );
    assert_eq!(
        (phases[4]["ranks"].as_u64(), phases[4]["completed"].as_u64()),
        (Some(2), Some(0))
    );
    let rank0 = ranks[0]["phases"].as_array().unwrap();
    assert_eq!(rank0[4]["phase"], "cuda_graph");
    assert_eq!(
        rank0[4]["start"]["at"], "2026-12-01T10:00:06.000000-00:00",
        "{}",
        rank0[4]
    );
    // kv_cache ran 10:00:05 -> 10:00:06 and is complete; the pool's 3.25 GiB is its figure.
    assert_eq!(rank0[3]["duration_s"], 1.0, "{}", rank0[3]);
    assert_eq!(rank0[3]["complete"], true);
    // 3.25 × 2^30 bytes.
    let kv_size = rank0[3]["figures"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == "kv_size"))
        .expect("a kv_size figure");
    assert_eq!(
        (&kv_size["unit"], &kv_size["value"]),
        (
            &serde_json::json!("bytes"),
            &serde_json::json!(3_489_660_928u64)
        )
    );
    // TP0 failed first: it is the root.
    assert_eq!(run["root"], "TP0");
}

/// The pages the server counts its KV pool in are a figure of their own, in their own
/// unit, in the summary's text and JSON alike.
#[test]
fn the_declared_pages_figure_is_read_in_its_own_unit() {
    let doc = summary_json();
    // rank0.log line 5 and rank1.log line 5: "page pool ready: 2048 pages, 3.25 GiB".
    for (r, rank) in doc["run"]["ranks"].as_array().unwrap().iter().enumerate() {
        let kv = &rank["phases"][3];
        assert_eq!(kv["phase"], "kv_cache");
        let pages = kv["figures"]
            .as_array()
            .and_then(|fs| fs.iter().find(|f| f["name"] == "kv_pages"))
            .expect("a kv_pages figure");
        assert_eq!(
            pages,
            &serde_json::json!({
                "name": "kv_pages", "unit": "pages", "value": 2048, "resolution": 1,
                "source": format!("{DIR}/run/rank{r}.log"), "line": 5
            })
        );
    }
    // The phase table's statistics: both ranks 2048 pages.
    let kv_stats = &doc["run"]["phases"][3];
    let stats = kv_stats["figures"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == "kv_pages"))
        .expect("kv_pages statistics");
    assert_eq!(
        (&stats["unit"], &stats["ranks"]),
        (&"pages".into(), &2.into())
    );
    assert_eq!(stats["spread"]["median"], 2048.0);
    // The text names what the figure counts.
    let (_, text) = run_with(
        &format!("{DIR}/pagesrv.toml"),
        &["summary", &format!("{DIR}/run")],
    );
    assert!(text.contains("  kv pages         2,048 pages\n"), "{text}");
}

/// `diff` compares a declared figure like a built-in one, and its direction decides
/// whether the candidate is worse on it and whether it can be the first divergence.
#[test]
fn diff_reads_the_declared_figure_and_its_direction() {
    let (base, cand) = (format!("{DIR}/baseline"), format!("{DIR}/run"));
    let grammar = format!("{DIR}/pagesrv.toml");
    let (_, out) = run_with(&grammar, &["diff", "--json", &base, &cand]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    // baseline/rank{0,1}.log line 5: 2304 pages, 3.25 GiB; run/: 2048 pages, 3.25 GiB.
    // The pool's bytes are the same, its pages 256 fewer on both ranks: the first (and
    // only) figure to move, and fewer pages is worse (`worse = "less"`).
    let div = &doc["first_divergence"];
    assert_eq!(
        (&div["phase"], &div["name"], &div["unit"]),
        (&"kv_cache".into(), &"kv_pages".into(), &"pages".into())
    );
    assert_eq!(
        (&div["baseline_median"], &div["candidate_median"]),
        (&2304.0.into(), &2048.0.into())
    );
    assert_eq!(div["delta"]["median"], -256.0);
    let pages = doc["figures"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == "kv_pages"))
        .unwrap();
    assert_eq!(
        (&pages["worse"], &pages["ranks_moved"]),
        (&true.into(), &2.into())
    );
    // After kv_cache's built-in figure (kv_size), in start-up order.
    let order: Vec<&str> = (doc["figures"].as_array().unwrap().iter())
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["mem_usage", "kv_size", "kv_pages"]);
    let (_, text) = run_with(&grammar, &["diff", &base, &cand]);
    assert!(
        text.contains(
            "kv_cache  kv pages -256 pages on 2/2 ranks (systematic; 2,304\n          pages -> 2,048 pages)"
        ),
        "{text}"
    );

    // The same figure declared with no worse direction: still compared, never worse,
    // never the first divergence.
    let dir = tempfile::tempdir().unwrap();
    let neither = dir.path().join("neither.toml");
    std::fs::write(
        &neither,
        std::fs::read_to_string(&grammar)
            .unwrap()
            .replace("worse = \"less\"", "worse = \"neither\""),
    )
    .unwrap();
    let (_, out) = run_with(neither.to_str().unwrap(), &["diff", "--json", &base, &cand]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        doc["first_divergence"].is_null(),
        "{}",
        doc["first_divergence"]
    );
    let pages = doc["figures"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["name"] == "kv_pages"))
        .unwrap();
    assert_eq!(
        (&pages["worse"], &pages["class"]),
        (&false.into(), &"systematic".into())
    );
}

/// A figure name neither built in nor declared is refused, the known and declared ones
/// listed; so are a declaration the model could not use and one nothing reports.
#[test]
fn figure_declarations_are_checked() {
    let (code, err) = check_edited(|g| g.replace("kv_pages = \"pages\"", "kv_page = \"pages\""));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("figures.kv_page: not a figure (built-in: mem_usage, avail_before, avail_after, tokens, kv_avail, kv_size, elapsed; declared by this grammar: kv_pages;"),
        "{err}"
    );
    // kv_page unknown is reported before kv_pages unreported: the first error wins.
    let (code, err) = check_edited(|g| g.replace("unit = \"pages\"", "unit = \"GiB\""));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("figure 1 (`kv_pages`): unit `GiB` is not a figure's unit"),
        "{err}"
    );
    let (code, err) = check_edited(|g| g.replace("worse = \"less\"", "worse = \"lower\""));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("worse `lower` is not more, less or neither"),
        "{err}"
    );
    let (code, err) = check_edited(|g| g.replace("name = \"kv_pages\"", "name = \"tokens\""));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`tokens` is a built-in figure"), "{err}");
    let (code, err) = check_edited(|g| g.replace("kv_pages = \"pages\", ", ""));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("figure `kv_pages` is declared but no event's `figures` reports it"),
        "{err}"
    );
    // A pages figure read from a capture printed in GiB: the capture's unit must count.
    let (code, err) =
        check_edited(|g| g.replace("kv_pages = \"pages\"", "kv_pages = \"pool_bytes\""));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "figures.kv_pages: capture `pool_bytes` has unit `GiB`; the figure needs `int`"
        ),
        "{err}"
    );
}

/// `then` needs an end line and a later phase; a grammar that says otherwise is refused
/// with the reason, by `grammars check` as by every command.
#[test]
fn then_on_a_line_that_does_not_end_its_phase_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let grammar = std::fs::read_to_string(format!("{DIR}/pagesrv.toml"))
        .unwrap()
        .replace(
            "edge = \"ends\"\nthen = \"cuda_graph\"",
            "edge = \"begins\"\nthen = \"cuda_graph\"",
        );
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, grammar).unwrap();
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args(["grammars", "check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("then = `cuda_graph`") && err.contains("needs edge = \"ends\""),
        "{err}"
    );
}

/// A second made-up server, `blocksrv` (`tests/fixtures/made-up-server-2/`): its grammar
/// was written from docs/grammars.md alone. It names ranks `[node:gpu3]`, counts its KV
/// cache as `kv: 812 blocks x 16 tok` (two figures of its own), prints no line when the
/// KV cache's sizing begins, and in `failed/` one rank cannot read a weight shard while the
/// other leaves because its peer is gone. Values read off the logs by hand.
const DIR2: &str = "tests/fixtures/made-up-server-2";

fn blocksrv_json(run: &str) -> serde_json::Value {
    let (code, out) = run_with(
        &format!("{DIR2}/blocksrv.toml"),
        &["summary", "--json", &format!("{DIR2}/{run}")],
    );
    assert!(matches!(code, Some(0 | 1)), "{out}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn blocksrv_reads_from_its_grammar_alone() {
    let out = Command::cargo_bin("rankscope")
        .unwrap()
        .args(["grammars", "check", &format!("{DIR2}/blocksrv.toml")])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "4 samples checked, 0 failed\n"
    );

    let doc = blocksrv_json("healthy");
    let ranks = doc["run"]["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    // gpu0.log: shards loaded at 09:00:09.900 (line 5) begin kv_cache, `kv:` at 10.300
    // (line 6) ends it: 0.4 s; gpu1.log: 10.100 -> 10.350, 0.25 s.
    for (rank, kv_s) in [(&ranks[0], 0.4), (&ranks[1], 0.25)] {
        assert_eq!(rank["outcome"], "ready", "{rank}");
        let kv = &rank["phases"][3];
        assert_eq!(
            (&kv["phase"], kv["duration_s"].as_f64()),
            (&"kv_cache".into(), Some(kv_s)),
            "{kv}"
        );
        let figure = |name: &str| {
            let f = kv["figures"]
                .as_array()
                .and_then(|fs| fs.iter().find(|f| f["name"] == name))
                .unwrap_or_else(|| panic!("no {name} in {kv}"));
            (f["unit"].clone(), f["value"].clone(), f["line"].clone())
        };
        assert_eq!(figure("kv_blocks"), ("blocks".into(), 812.into(), 6.into()));
        assert_eq!(
            figure("block_tokens"),
            ("tokens".into(), 16.into(), 6.into())
        );
        // weight_load: 7.10 GiB = 7,623,566,950 bytes (rounded), line 5.
        let weights = &rank["phases"][2]["figures"][0];
        assert_eq!(
            (&weights["name"], &weights["value"]),
            (&"mem_usage".into(), &7_623_566_950u64.into())
        );
    }

    let doc = blocksrv_json("failed");
    let run = &doc["run"];
    assert_eq!(run["root"], "TP1");
    let ranks = run["ranks"].as_array().unwrap();
    // gpu1.log:5 `FATAL: shard 3 of 4 unreadable: …` while loading weights.
    let f1 = &ranks[1]["failure"];
    assert_eq!(
        (&ranks[1]["outcome"], &f1["kind"], &f1["phase"], &f1["line"]),
        (
            &"failed".into(),
            &"exception".into(),
            &"weight_load".into(),
            &5.into()
        )
    );
    assert_eq!(
        f1["message"],
        "FATAL: shard 3 of 4 unreadable: checksum mismatch in ash-7b-00003.safetensors"
    );
    // gpu0.log:5 `peer gpu1 lost, exiting`: a consequence of TP1.
    assert_eq!(ranks[0]["outcome"], "consequence");
    assert_eq!(ranks[0]["failure"]["line"], 5);

    // The failed run against the healthy one: the candidate failed (exit 1).
    let (code, text) = run_with(
        &format!("{DIR2}/blocksrv.toml"),
        &[
            "diff",
            &format!("{DIR2}/healthy"),
            &format!("{DIR2}/failed"),
        ],
    );
    assert_eq!(code, Some(1));
    assert!(
        text.starts_with("FAILED  candidate: TP1 raised an exception in weight_load"),
        "{text}"
    );
}
