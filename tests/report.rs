//! `rankscope report`: the HTML page's figures against the sample logs (read by hand), its
//! words against `diff`'s, its size at 8 and 1,024 ranks, and hostile log text shown as
//! text. The page in a real browser: tests/report_browser.rs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;

use assert_cmd::Command;

fn rankscope() -> Command {
    let mut c = Command::cargo_bin("rankscope").expect("binary built");
    c.env_remove("RANKSCOPE_GRAMMAR_DIR")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("NO_COLOR", "1");
    c
}

/// The page `report ARGS -o -` writes.
fn page(args: &[&str]) -> String {
    let out = rankscope()
        .arg("report")
        .args(args)
        .args(["-o", "-"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 page")
}

/// The markup between `<svg … id="ID"` and its `</svg>`.
fn svg<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no svg {id}"));
    let end = html[start..].find("</svg>").expect("svg closed") + start;
    &html[start..end]
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// The same escaping as the page's, for checking that text is there as text.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[test]
fn tp8_custom_ar_against_its_baseline() {
    let html = page(&["samples/tp8-custom-ar", "--vs", "samples/tp8-baseline"]);
    assert!(html.len() < 1 << 20, "8 ranks: {} bytes", html.len());
    // The verdict: every rank of the candidate logged `torch.OutOfMemoryError` during
    // `Capture cuda graph`, while every baseline rank logged `fired up`.
    assert!(html.contains(
        "<span class=\"status bad\">FAILED</span>candidate: all 8 ranks ran out of memory in cuda_graph; baseline reached ready"
    ));
    // The root's evidence: server.log line 82 is TP2's `torch.OutOfMemoryError` line, the
    // first of the eight (TP2's block comes first in the file), 30.96 GiB free on its GPU.
    assert!(html.contains(
        "first to fail on its own: TP2 ran out of memory in cuda_graph (phase from frames), samples/tp8-custom-ar/server.log:82"
    ));
    assert!(html.contains("<cite>samples/tp8-custom-ar/server.log:82</cite>torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which 30.96 GiB is free."));
    // server_args: enable_custom_allreduce=False in the baseline, True in the candidate.
    assert!(html.contains("<td class=\"\">enable_custom_allreduce  False -&gt; True</td>"));
    // The run identity: both server logs are SGLang's; the candidate's first line is
    // stamped 09:18:30, the baseline's 09:18:09.
    assert!(html.contains("<td>sglang</td>"));
    assert!(html.contains("2026-11-29 09:18:30"));
    assert!(html.contains("2026-11-29 09:18:09"));
    assert!(html.contains(&format!("rankscope {}", env!("CARGO_PKG_VERSION"))));

    // The timeline: eight lanes, TP2's the root's; each rank's last bar is the cuda_graph
    // capture it failed in, marked, and a failure marker on each.
    let tl = svg(&html, "tl-cand");
    assert_eq!(count(tl, "<g class=\"lane"), 8);
    assert_eq!(count(tl, "<g class=\"lane root\""), 1);
    assert!(tl.contains("data-rank=\"TP2\" data-node=\"-\" data-outcome=\"failed\""));
    assert_eq!(count(tl, "p-cuda_graph open failph"), 8);
    assert_eq!(count(tl, "<path class=\"fail\""), 8);
    // TP5 loaded its weights last: `Load weight end` at 09:18:42, 12 s after the first line
    // (09:18:30); its failure marker's hover says so, with its line (server.log:134).
    assert!(tl.contains("TP5 oom in cuda_graph at t+12.0 s, server.log:"));
    // The hover lines of TP0's weight_load bar hold its `Load weight begin` (09:18:37, line 33) and
    // `Load weight end` (09:18:41) lines, 7 s and 11 s after the first line.
    assert!(tl.contains("TP0 weight_load t+7.0 s to t+11.0 s"));
    assert!(tl.contains("server.log:33 Load weight begin. avail mem=13.96 GB"));
    let baseline_tl = svg(&html, "tl-base");
    assert_eq!(count(baseline_tl, "<g class=\"lane\""), 8);

    // Memory per phase: every rank printed the same figures, so one row: mem usage 0.64 GB
    // after dist init (baseline 0.60), 7.31 GB of weights (7.29), K + V = 2.98 + 2.98 GB
    // of KV pool in both, 0.60 GB free after the pool (the baseline: 0.01 GB after its
    // graphs, which took 0.63 GB).
    let mem = &html[html.find("id=\"mem-table\"").expect("memory table")..];
    let row = &mem[mem.find("TP0–TP7 (8 ranks)").expect("one row")..];
    let row = &row[..row.find("</tr>").expect("row ends")];
    let cells: Vec<&str> = row.split("<td class=\"num\">").skip(1).collect();
    let expected = [
        ("0.64 GiB", "0.60 GiB"),
        ("7.31 GiB", "7.29 GiB"),
        ("5.96 GiB", "5.96 GiB"),
        ("-", "0.63 GiB"),
        ("0.60 GiB", "0.01 GiB"),
    ];
    assert_eq!(cells.len(), expected.len());
    for (c, (cand, base)) in cells.iter().zip(expected) {
        assert!(
            c.starts_with(&format!("{cand}<br><span class=\"muted\">{base}</span>")),
            "{c}"
        );
    }
    // nvidia-smi: the candidate's CSV peaks at 120,115 MiB used (117.30 GiB) on a
    // 143,771 MiB (140.40 GiB) device.
    assert!(html.contains("GPU0: peak 117.30 GiB used at t+12.6 s"));
    assert!(html.contains("<title>GPU0 total 140.40 GiB</title>"));
    // Snapshots: each rank's largest site is load_weights (7.29 GiB), as `mem` says.
    assert!(html.contains("load_weights (model_runner.py:109-112) 7.29 GiB allocated"));

    // Self-contained: nothing is fetched (no src, href, url() or @import), and the policy
    // forbids it anyway.
    for needle in [
        "src=", "href=", "url(", "@import", "<link", "<iframe", "<object",
    ] {
        assert!(!html.contains(needle), "{needle}");
    }
    assert!(html.contains("content=\"default-src 'none';"));
}

/// Every row of `diff`'s verdict is on the page, word for word: one function words both.
#[test]
fn the_page_words_the_verdict_as_diff_does() {
    let html = page(&["samples/tp8-custom-ar", "--vs", "samples/tp8-baseline"]);
    let out = rankscope()
        .args(["--width", "1000", "diff"])
        .args(["samples/tp8-baseline", "samples/tp8-custom-ar"])
        .output()
        .expect("runs");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let mut rows = 0;
    for line in text.lines().take_while(|l| !l.starts_with("note")).skip(2) {
        // `label     text`: the label is the first 10 columns.
        let Some(words) = line.get(10..).map(str::trim) else {
            continue;
        };
        if words.is_empty() {
            continue;
        }
        rows += 1;
        assert!(html.contains(&esc(words)), "not on the page: {words}");
    }
    // config (2), cause (4), effect, remedy (3), baseline, candidate (3).
    assert_eq!(rows, 14, "{text}");
}

/// A run on its own: `summary`'s verdict, and the straggler outlined. In
/// samples/tp2-straggler TP1 ends weight_load at 09:20:26, 6 s after TP0 (09:20:20).
#[test]
fn a_run_on_its_own_marks_its_straggler() {
    let html = page(&["samples/tp2-straggler"]);
    let tl = svg(&html, "tl-cand");
    assert_eq!(count(tl, "<g class=\"lane"), 2);
    assert_eq!(count(tl, " late\""), 1);
    let lane = &tl[tl.find("data-rank=\"TP1\"").expect("TP1")..];
    let lane = &lane[..lane.find("</g>").expect("lane ends")];
    assert!(lane.contains("class=\"p-weight_load late\""));
    assert!(lane.contains("straggler: ended later than the others"));
    assert!(html.contains("<span class=\"status good\">READY</span>2 ranks reached ready"));
}

/// Log lines, file names and configuration values holding markup are text on the page.
#[test]
fn hostile_text_is_shown_as_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run<img src=x onerror=alert(7)>");
    std::fs::create_dir(&run).expect("run dir");
    let mut log = String::from(
        "[2026-11-29 09:18:30] server_args=ServerArgs(model_path='</svg><script>alert(1)</script>', tp_size=2, mem_fraction_static=0.9)\n",
    );
    for r in 0..2 {
        let _ = writeln!(
            log,
            "[2026-11-29 09:18:33 TP{r}] Init torch distributed begin.\n\
             [2026-11-29 09:18:35 TP{r}] Init torch distributed ends. elapsed=2.00 s, mem usage=0.64 GB\n\
             [2026-11-29 09:18:35 TP{r}] Load weight begin. avail mem=13.96 GB"
        );
    }
    log.push_str(
        "<script>alert(2)</script> a line no grammar reads\n\
         [2026-11-29 09:18:36 TP1] Scheduler hit an exception: Traceback (most recent call last):\n  \
         File \"/opt/x.py\", line 3, in load\n    \
         load('javascript:alert(3)')\n\
         RuntimeError: bad checkpoint <img src=x onerror=alert(4)> javascript:alert(5) </svg></table><script>alert(6)</script>\n\n",
    );
    std::fs::write(run.join("server.log"), &log).expect("log written");
    let html = page(&[run.to_str().expect("UTF-8 path")]);
    // Ours: one script, one SVG per drawing, each closed once.
    assert_eq!(count(&html, "<script"), 1);
    assert_eq!(count(&html, "<svg"), count(&html, "</svg>"));
    assert_eq!(count(&html, "<table"), count(&html, "</table>"));
    for markup in [
        "<img",
        "<script>alert",
        "</svg><script",
        "alert(6)</script>",
    ] {
        assert!(!html.contains(markup), "{markup} as markup");
    }
    // Theirs, as text: the failure's line quoted, the configuration value in the hover,
    // the line not understood, the directory's name.
    for text in [
        "RuntimeError: bad checkpoint &lt;img src=x onerror=alert(4)&gt; javascript:alert(5) &lt;/svg&gt;&lt;/table&gt;&lt;script&gt;alert(6)&lt;/script&gt;",
        "&lt;script&gt;alert(2)&lt;/script&gt; a line no grammar reads",
        "run&lt;img src=x onerror=alert(7)&gt;",
        "load(&#39;javascript:alert(3)&#39;)",
    ] {
        assert!(html.contains(text), "{text}");
    }
    // A `javascript:` URL is never a link target: the page has no links at all.
    assert!(!html.contains("href="));
}

/// A 1,024-rank run of SGLang lines (one rank fails, the others reach ready) in
/// `dir`/server.log.
pub fn many_ranks(dir: &Path, ranks: u32, failing: u32) {
    let mut log = format!(
        "[2026-11-29 09:18:30] server_args=ServerArgs(model_path='synthetic-61L', tp_size={ranks}, pp_size=1, mem_fraction_static=0.9)\n"
    );
    for r in 0..ranks {
        let s = r % 3;
        let _ = writeln!(
            log,
            "[2026-11-29 09:18:3{s} TP{r}] Init torch distributed begin.\n\
             [2026-11-29 09:18:37 TP{r}] Init torch distributed ends. elapsed=2.42 s, mem usage=0.64 GB\n\
             [2026-11-29 09:18:37 TP{r}] Load weight begin. avail mem=13.96 GB\n\
             [2026-11-29 09:18:41 TP{r}] Load weight end. elapsed=4.05 s, type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=6.56 GB, mem usage=7.31 GB.\n\
             [2026-11-29 09:18:41 TP{r}] KV Cache is allocated. #tokens: 91141, K size: 2.98 GB, V size: 2.98 GB\n\
             [2026-11-29 09:18:41 TP{r}] Memory pool end. avail mem=0.60 GB\n\
             [2026-11-29 09:18:41 TP{r}] Capture cuda graph begin. This can take up to several minutes. avail mem=0.60 GB"
        );
        if r == failing {
            let _ = writeln!(
                log,
                "[2026-11-29 09:18:42 TP{r}] Scheduler hit an exception: Traceback (most recent call last):\n  \
                 File \"/opt/sim/sglang_sim/model_runner.py\", line 161, in capture_graphs\n    \
                 out = static_in * 2\n\
                 torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 139.80 GiB of which 0 bytes is free.\n"
            );
        } else {
            let _ = writeln!(
                log,
                "[2026-11-29 09:18:43 TP{r}] Capture cuda graph end. Time elapsed: 0.02 s. mem usage=0.63 GB. avail mem=0.01 GB.\n\
                 [2026-11-29 09:18:44 TP{r}] The server is fired up and ready to roll!"
            );
        }
    }
    std::fs::write(dir.join("server.log"), log).expect("log written");
}

#[test]
fn a_thousand_ranks_stay_under_five_megabytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    many_ranks(dir.path(), 1024, 517);
    let html = page(&[dir.path().to_str().expect("UTF-8 path")]);
    eprintln!("1,024 ranks: {} bytes", html.len());
    assert!(html.len() < 5 << 20, "{} bytes", html.len());
    let tl = svg(&html, "tl-cand");
    assert_eq!(count(tl, "<g class=\"lane"), 1024);
    assert_eq!(count(tl, "<g class=\"lane root\""), 1);
    assert!(tl.contains("data-rank=\"TP517\""));
    // Opened grouped by outcome (the failed rank's group first), with a filter box.
    assert!(html.contains("<option value=\"outcome\" selected>"));
    assert!(html.contains("id=\"tl-cand-filter\" type=\"search\""));
    // The 1,023 ranks that printed the same figures are one row of the memory table.
    assert!(html.contains("TP0–TP516, TP518–TP1023 (1,023 ranks)"));
}

/// The memory section is the breakdown of `summary --memory`: tp8-custom-ar-fixed against
/// its baseline names the moved category (`Init torch distributed … mem usage` 0.60 →
/// 0.64 GB, +40.96 MiB on every rank) and the KV pool it cost (K + V 2.98 + 2.98 → 2.96 +
/// 2.96 GB); each row carries its derivation with file:line — the weights are
/// `Load weight begin avail` 13.96 minus `Load weight end avail` 6.56 (rank0.log:4, :5) —
/// and the categories add up to 14.00 + 0.64 = 14.60 GiB.
#[test]
fn the_memory_section_draws_the_breakdown_and_names_the_moved_category() {
    let html = page(&[
        "samples/tp8-custom-ar-fixed",
        "--vs",
        "samples/tp8-baseline",
    ]);
    let at = html
        .find("id=\"breakdown\"")
        .expect("the breakdown section");
    let section = &html[at..];
    assert!(section.contains(
        "<li>NCCL / custom AR / outside PyTorch: +40.96 MiB (±10.24 MiB) on 8 of 8 ranks</li>"
    ));
    assert!(section.contains("<li>KV pool: -40.96 MiB (±20.48 MiB) on 8 of 8 ranks</li>"));
    assert!(section.contains(
        "= weight_load.avail_before 13.96 GiB (samples/tp8-custom-ar-fixed/rank0.log:4) − weight_load.avail_after 6.56 GiB (samples/tp8-custom-ar-fixed/rank0.log:5)"
    ));
    assert!(section.contains("categories add up to the device: 14.60 GiB against 14.60 GiB"));
    // One bar of seven categories' rects at most, each titled with its GiB.
    assert!(section.contains("<rect class=\"c-comm\""));
    assert!(section.contains(&esc(
        "capacity: enable_custom_allreduce False → True: -597 tokens/rank"
    )));
}
