//! The TUI rendered into a fixed-size buffer after synthetic key presses.

// A test that unwraps fails on its own line; input is what the tool under test reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use rankscope::grammar::GrammarSet;
use rankscope::model::Run;
use rankscope::session::{LoadOptions, Session};
use rankscope::tui::app::Snapshots;
use rankscope::tui::{input, render_text, update, App, Msg, View};

const SIZES: [(u16, u16); 2] = [(120, 40), (80, 24)];

fn load(name: &str) -> Run {
    let gs = GrammarSet::new(GrammarSet::builtin_grammars().expect("grammars")).expect("set");
    // Relative, so that snapshots show the same path on every machine; tests run from
    // the package root.
    let path = Path::new("samples").join(name);
    Session::open(
        &gs,
        &[path.to_path_buf()],
        &LoadOptions::default(),
        &|_, _| {},
    )
    .expect("sample loads")
    .run
}

/// The run with its ranks' snapshots attached, as `rankscope tui` loads it.
fn with_snapshots(name: &str) -> App {
    let gs = GrammarSet::new(GrammarSet::builtin_grammars().expect("grammars")).expect("set");
    let loaded = Session::open(
        &gs,
        &[Path::new("samples").join(name)],
        &LoadOptions::default(),
        &|_, _| {},
    )
    .expect("sample loads");
    let (run, snaps) = loaded.into_parts();
    assert!(snaps.errors.is_empty(), "{:?}", snaps.errors);
    let read = Snapshots {
        run: &snaps.matched,
        errors: snaps.errors,
        ..Snapshots::default()
    };
    App::from_loaded(run, None, read, gs.knowledge().clone(), false)
}

fn failing() -> App {
    App::new(load("tp8-custom-ar"), None, false)
}

/// `rankscope tui CANDIDATE --vs BASELINE` as the loading worker builds it: both runs and
/// both runs' snapshots.
fn vs(candidate: &str, baseline: &str) -> App {
    let gs = GrammarSet::new(GrammarSet::builtin_grammars().expect("grammars")).expect("set");
    let progress = rankscope::tui::loading::Progress::default();
    rankscope::tui::loading::load_app_paths(
        &gs,
        &[Path::new("samples").join(candidate)],
        &[Path::new("samples").join(baseline)],
        &LoadOptions::default(),
        Default::default(),
        false,
        &progress,
    )
    .expect("samples load")
}

fn with_baseline() -> App {
    vs("tp8-custom-ar", "tp8-baseline")
}

/// Presses keys through the same mapping the terminal loop uses.
fn keys(app: &mut App, codes: &[KeyCode]) {
    for c in codes {
        if let Some(m) = input::from_key(KeyEvent::new(*c, KeyModifiers::NONE), app) {
            update(app, m);
        }
    }
}

/// A failed run opens on its root rank with the cursor on its failure; the tests of other
/// features start from TP0 at 0 s, reached by keys: ↑ to the first rank, Home.
fn from_first_rank(app: &mut App) {
    for _ in 0..app.rank_sel {
        keys(app, &[KeyCode::Up]);
    }
    keys(app, &[KeyCode::Home]);
    assert_eq!(app.rank_sel, 0);
    assert_eq!(app.cursor_s, 0.0);
}

fn chars(app: &mut App, s: &str) {
    let codes: Vec<KeyCode> = s.chars().map(KeyCode::Char).collect();
    keys(app, &codes);
}

#[test]
fn timeline_shows_every_rank_phase_and_the_oom() {
    let mut app = failing();
    let screen = render_text(&mut app, 120, 40);
    for r in 0..8 {
        assert!(
            screen.lines().any(|l| l.starts_with(&format!("TP{r}"))),
            "TP{r} row missing:\n{screen}"
        );
    }
    for p in [
        "launch",
        "dist_init",
        "weight_load",
        "kv_cache",
        "cuda_graph",
        "ready",
    ] {
        assert!(screen.contains(p), "{p} missing from the legend");
    }
    assert!(screen.contains("✗oom"), "OOM marker missing:\n{screen}");
    insta::assert_snapshot!("timeline_120x40", screen);
}

#[test]
fn timeline_at_80x24_after_zoom_and_moves() {
    let mut app = failing();
    from_first_rank(&mut app);
    keys(
        &mut app,
        &[KeyCode::Down, KeyCode::Down, KeyCode::Right, KeyCode::Right],
    );
    chars(&mut app, "++llllllllll");
    let screen = render_text(&mut app, 80, 24);
    assert!(screen.contains("TP2"), "{screen}");
    assert_eq!(
        app.selected_rank().map(|r| r.to_string()).as_deref(),
        Some("TP2")
    );
    insta::assert_snapshot!("timeline_80x24_zoomed", screen);
}

#[test]
fn events_view_filters_by_rank_searches_and_shows_detail() {
    let mut app = failing();
    from_first_rank(&mut app);
    keys(&mut app, &[KeyCode::Down, KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.view, View::Events);
    let screen = render_text(&mut app, 120, 40);
    assert!(screen.contains("Events of TP1"), "{screen}");
    insta::assert_snapshot!("events_tp1_120x40", screen);

    chars(&mut app, "/oom");
    keys(&mut app, &[KeyCode::Enter]);
    let e = app.selected_event().expect("a match is selected");
    assert!(e.message.to_lowercase().contains("out of memory") || e.kind == "oom");
    keys(&mut app, &[KeyCode::Enter]);
    assert!(app.detail);
    let screen = render_text(&mut app, 120, 40);
    assert!(
        screen.contains("server.log:"),
        "file:line missing:\n{screen}"
    );
    assert!(
        screen.contains("in capture_graphs"),
        "traceback missing:\n{screen}"
    );
    insta::assert_snapshot!("events_detail_120x40", screen);

    // Esc closes the detail pane, and never quits: q does.
    keys(&mut app, &[KeyCode::Esc]);
    assert!(!app.detail && !app.quit);
    keys(&mut app, &[KeyCode::Esc]);
    assert!(!app.quit);
    assert!(render_text(&mut app, 80, 24).contains("nothing to close: q quits"));
    chars(&mut app, "q");
    assert!(app.quit);
}

/// tp2-nccl-fail: TP0's NCCL error (server.log:20, `torch.distributed.DistBackendError`)
/// is the root; TP1's exception is a consequence. The Events view opens on the root's
/// line (it opened on TP0's first event, five keys away), and `!` goes there from any
/// view; the timeline marks the root's failure.
#[test]
fn the_root_failure_is_marked_and_one_key_away() {
    let mut app = App::new(load("tp2-nccl-fail"), None, false);
    let screen = render_text(&mut app, 80, 24);
    let marked: Vec<&str> = screen.lines().filter(|l| l.contains("✗")).collect();
    assert!(
        marked
            .iter()
            .any(|l| l.starts_with("TP0") && l.contains("✗nccl ◀")),
        "{screen}"
    );
    assert!(
        !marked
            .iter()
            .any(|l| l.starts_with("TP1") && l.contains('◀')),
        "{screen}"
    );
    assert!(screen.contains("◀ root (press !)"), "{screen}");
    assert!(
        screen
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("! root")),
        "{screen}"
    );
    // The header says the verdict in words, not `FAILED 1/2 consequence,nccl`.
    assert!(
        screen
            .lines()
            .next()
            .is_some_and(|l| l.contains("FAILED TP0 failed in NCCL")),
        "{screen}"
    );

    keys(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.view, View::Events);
    let e = app.selected_event().expect("an event");
    assert_eq!(e.origin.line, 20, "{}", e.message);
    assert!(e.message.starts_with("torch.distributed.DistBackendError"));

    let mut app = App::new(load("tp2-nccl-fail"), None, false);
    chars(&mut app, "!");
    assert_eq!(app.view, View::Events);
    assert_eq!(app.selected_event().map(|e| e.origin.line), Some(20));

    // tp8-custom-ar: eight `✗oom`, one marked (TP2, the first to fail on its own).
    let mut app = failing();
    let screen = render_text(&mut app, 120, 40);
    let marked: Vec<&str> = screen.lines().filter(|l| l.contains("✗oom ◀")).collect();
    assert_eq!(marked.len(), 1, "{screen}");
    assert!(marked[0].starts_with("TP2"), "{screen}");
}

/// A failed run opens on its root failure with no key pressed: tp8-custom-ar's root is
/// TP2 (server.log: its OOM at 09:18:41, 11 s after the first stamp 09:18:30, is the
/// first failure of its own), so TP2 is selected, the cursor is on 11 s, and the footer's
/// line of TP2's `torch.OutOfMemoryError` carries the root mark. It opened on TP0 at 0 s,
/// TP0's events under it. The Events view, first shown, opens on the same line.
#[test]
fn a_failed_run_opens_on_its_root_failure() {
    let mut app = failing();
    assert_eq!(
        app.selected_rank().map(|r| r.to_string()).as_deref(),
        Some("TP2")
    );
    assert_eq!(app.cursor_s, 11.0);
    let screen = render_text(&mut app, 100, 30);
    assert!(
        screen.contains("cursor 11s (09:18:41.0)")
            && screen.contains("TP2: cuda_graph   ✗oom at 11s"),
        "{screen}"
    );
    let marked: Vec<&str> = screen.lines().filter(|l| l.starts_with('◀')).collect();
    assert_eq!(marked.len(), 1, "{screen}");
    assert!(
        marked[0].contains("oom") && marked[0].contains("torch.OutOfMemoryError"),
        "{screen}"
    );
    let root_line = app.run.root_failure().and_then(|(_, f)| f.origin.clone());
    keys(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.view, View::Events);
    assert_eq!(app.selected_event().map(|e| e.origin.clone()), root_line);

    // A ready run has no root: it opens on TP0 at 0 s, as before.
    let app = App::new(load("tp8-baseline"), None, false);
    assert_eq!((app.rank_sel, app.cursor_s), (0, 0.0));
}

/// The header keeps the run path's informative end when it must be shortened.
#[test]
fn the_header_shortens_the_path_from_the_left() {
    let (verdict, path) = rankscope::tui::ui::header_texts(
        "TP0 failed in NCCL in dist_init; 1 rank failed as a consequence",
        "/work/shared/fixtures/gpu2/tp2_nccl_fail",
        60,
    );
    assert_eq!(path, "…/gpu2/tp2_nccl_fail");
    assert!(verdict.starts_with("TP0 failed in NCCL"), "{verdict}");
    assert!(
        rankscope::base::text::columns(&verdict) + rankscope::base::text::columns(&path) + 2 <= 60,
        "{verdict} {path}"
    );
    let (_, path) =
        rankscope::tui::ui::header_texts("", "/work/shared/fixtures/gpu2/tp2_nccl_fail", 40);
    assert_eq!(path, "…/shared/fixtures/gpu2/tp2_nccl_fail");
}

#[test]
fn no_size_panics_and_views_cycle() {
    for (w, h) in [(1, 1), (10, 5), (20, 3), (80, 24), (250, 70)] {
        for mut app in [failing(), with_baseline()] {
            for _ in 0..5 {
                let _ = render_text(&mut app, w, h);
                update(&mut app, Msg::ZoomIn);
                update(&mut app, Msg::MoveTime(1000));
                update(&mut app, Msg::Move(100));
                update(&mut app, Msg::ToggleHelp);
                let _ = render_text(&mut app, w, h);
                update(&mut app, Msg::ToggleHelp);
                update(&mut app, Msg::ToggleDetail);
                update(&mut app, Msg::NextView);
            }
        }
    }
    for (w, h) in SIZES {
        let mut app = failing();
        update(&mut app, Msg::ZoomOut);
        update(&mut app, Msg::ZoomOut);
        let _ = render_text(&mut app, w, h);
    }
}

#[test]
fn memory_view_lists_each_rank_with_its_figures() {
    let mut app = failing();
    keys(&mut app, &[KeyCode::Tab]);
    assert_eq!(app.view, View::Memory);
    for (w, h) in SIZES {
        let screen = render_text(&mut app, w, h);
        assert!(screen.contains("weights"), "{screen}");
        assert!(screen.lines().any(|l| l.starts_with("TP7")), "{screen}");
        assert!(
            screen.contains("7.31 GiB"),
            "weights figure missing:\n{screen}"
        );
        insta::assert_snapshot!(format!("memory_{w}x{h}"), screen);
    }
}

#[test]
fn diff_view_calls_out_the_first_divergence_and_the_failure() {
    let mut app = with_baseline();
    from_first_rank(&mut app);
    keys(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.view, View::Diff);
    for (w, h) in SIZES {
        let screen = render_text(&mut app, w, h);
        assert!(screen.contains("FAILED"), "{screen}");
        // The two facts `rankscope diff` leads with, on the first screen at both sizes:
        // the one server_args key that differs between the samples' `server_args=` lines
        // (False in tp8-baseline/server.log, True in tp8-custom-ar/server.log) ...
        assert!(
            screen.contains("config    enable_custom_allreduce  False -> True"),
            "{screen}"
        );
        // ... and the site the snapshots blame: init_custom_ar reserves a 40 MiB segment
        // (2 × 20 MiB) in every candidate snapshot and none in the baseline's, against
        // dist_init's mem usage 0.60 → 0.64 GB (+0.04 GiB = +40.96 MiB).
        assert!(
            screen.contains("init_custom_ar (model_runner.py:85-87)"),
            "{screen}"
        );
        assert!(
            screen.contains("dist_init  mem usage +40.96 MiB on 8/8 ranks"),
            "{screen}"
        );
        assert!(screen.contains("+40.00 MiB reserved"), "{screen}");
        // The failure: every rank's OOM line asks 20.00 MiB in cuda_graph.
        assert!(screen.contains("8/8 ranks: oom in cuda_graph"), "{screen}");
        // The facts come first: the config right under the verdict (one line at 120
        // columns, two at 80).
        let config_at = screen.lines().position(|l| l.starts_with("config"));
        assert_eq!(config_at, Some(if w == 80 { 3 } else { 2 }), "{screen}");
        insta::assert_snapshot!(format!("diff_{w}x{h}"), screen);
    }
    // The table is there below the facts: PgDn scrolls down to its last row.
    update(&mut app, Msg::Resize(80, 24));
    keys(&mut app, &[KeyCode::PageDown, KeyCode::PageDown]);
    let screen = render_text(&mut app, 80, 24);
    assert!(screen.contains("cuda_graph  avail before"), "{screen}");
    keys(&mut app, &[KeyCode::PageUp, KeyCode::PageUp]);
    assert_eq!(app.diff_scroll, 0);
}

/// The TUI's Diff view words a non-memory failure as `rankscope diff` does (one function
/// builds both): the root's NCCL error and the socket setting as its likely trigger, never
/// "no log figure moved".
#[test]
fn diff_view_of_an_nccl_failure_says_what_diff_says() {
    let mut app = vs("tp2-nccl-fail", "tp2-nccl-2gpu");
    keys(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.view, View::Diff);
    let screen = render_text(&mut app, 160, 40);
    assert!(
        screen.contains(
            "cause     TP0 failed in NCCL in dist_init (samples/tp2-nccl-fail/server.log:20)"
        ),
        "{screen}"
    );
    assert!(
        screen.contains("likely trigger: env NCCL_SOCKET_IFNAME (unset) -> nonexistent0"),
        "{screen}"
    );
    assert!(
        screen.contains("env NCCL_NVLS_ENABLE  0 -> (not logged)"),
        "{screen}"
    );
    assert!(!screen.contains("no log figure moved"), "{screen}");
    let cli = assert_cmd::Command::cargo_bin("rankscope")
        .expect("binary")
        .args([
            "diff",
            "samples/tp2-nccl-2gpu",
            "samples/tp2-nccl-fail",
            "--width",
            "160",
        ])
        .output()
        .expect("runs");
    let cli = String::from_utf8_lossy(&cli.stdout);
    for row in cli
        .lines()
        .skip_while(|l| !l.starts_with("cause"))
        .take_while(|l| !l.starts_with("baseline"))
    {
        assert!(
            screen.contains(row.trim_end()),
            "TUI lacks {row:?}:\n{screen}"
        );
    }
}

#[test]
fn diff_view_of_fragmentation_leads_with_the_config_and_the_pinning_site() {
    let mut app = vs("tp2-frag-interleaved", "tp2-frag-grouped");
    keys(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.view, View::Diff);
    for (w, h) in SIZES {
        let screen = render_text(&mut app, w, h);
        // server_args of the two samples differ in prefill_workspace_order ('grouped' in
        // the baseline, 'interleaved' in the candidate) and in the port of dist_init_addr.
        assert!(
            screen.contains("prefill_workspace_order  'grouped' -> 'interleaved'"),
            "{screen}"
        );
        // No log figure moved: the snapshots' cause, fragmentation, and the site whose
        // live blocks pin the holes (warm_prefill's lambda, launch.py line 76).
        assert!(screen.contains("fragmentation at the OOM"), "{screen}");
        assert!(screen.contains("warm_prefill/<lambda>"), "{screen}");
        assert!(screen.contains("2/2 ranks: oom in cuda_graph"), "{screen}");
        insta::assert_snapshot!(format!("diff_frag_{w}x{h}"), screen);
    }
}

#[test]
fn memory_view_with_a_baseline_marks_the_culprit_site_at_80x24() {
    let mut app = with_baseline();
    from_first_rank(&mut app);
    keys(&mut app, &[KeyCode::Tab]);
    assert_eq!(app.view, View::Memory);
    for (w, h) in [(80, 24), (200, 50)] {
        let screen = render_text(&mut app, w, h);
        // init_custom_ar is the 4th and smallest of TP0's live sites (24.03 MiB allocated
        // in a 40 MiB reservation) and the one the diff attributes +40 MiB to.
        let row = screen
            .lines()
            .find(|l| l.contains("init_custom_ar"))
            .unwrap_or_else(|| panic!("culprit site missing at {w}x{h}:\n{screen}"));
        assert!(row.starts_with("▶ init_custom_ar"), "{row}");
        assert!(
            row.contains("24.03 MiB") && row.ends_with("+40.00 MiB"),
            "{row}"
        );
        // The OOM in words, whole: TP0's snapshot records a 20 MiB request in
        // capture_graphs.
        assert!(
            screen.contains("✗oom at 11.3s: asked 20.00 MiB in capture_graphs (model_runner.py)"),
            "{screen}"
        );
        if (w, h) == (80, 24) {
            insta::assert_snapshot!("memory_vs_80x24", screen);
        }
    }
}

#[test]
fn help_overlay_lists_the_keys_and_esc_closes_it() {
    let mut app = failing();
    chars(&mut app, "?");
    let screen = render_text(&mut app, 80, 24);
    assert!(screen.contains("zoom in / out"), "{screen}");
    insta::assert_snapshot!("help_80x24", screen);
    keys(&mut app, &[KeyCode::Esc]);
    assert!(!app.help && !app.quit);
}

#[test]
fn colour_off_and_on_draw_the_same_text() {
    let mut plain = failing();
    let mut coloured = App::new(load("tp8-custom-ar"), None, true);
    assert_eq!(
        render_text(&mut plain, 120, 40),
        render_text(&mut coloured, 120, 40)
    );
}

/// A 40-minute start-up (a large model loading slowly) built from synthetic events.
fn long_run() -> Run {
    use rankscope::base::event::{Event, Origin, Rank};
    let t0 = chrono::NaiveDate::from_ymd_opt(2026, 1, 1)
        .and_then(|d| d.and_hms_opt(8, 0, 0))
        .expect("valid date");
    let steps: [(&str, i64); 9] = [
        ("dist_init_begin", 0),
        ("dist_init_end", 300),
        ("weight_load_begin", 300),
        ("weight_load_end", 2000),
        ("kv_budget", 2000),
        ("mem_pool_end", 2030),
        ("cuda_graph_begin", 2030),
        ("cuda_graph_end", 2380),
        ("ready", 2400),
    ];
    let mut events = Vec::new();
    let mut line = 0;
    for tp in 0..4u32 {
        // TP3 loads its weights ten minutes late.
        let lag = if tp == 3 { 600 } else { 0 };
        for (kind, s) in steps {
            line += 1;
            let s = if s >= 2000 { s + lag } else { s };
            events.push(Event {
                origin: Origin { source: 0, line },
                ts: Some(t0 + chrono::Duration::seconds(s)),
                ts_step_ms: 1000,
                year_inferred: false,
                rank: Some(Rank::tp(tp)),
                writer: None,
                time_only: false,
                kind: kind.into(),
                grammar: "synthetic".into(),
                fields: Default::default(),
                message: format!("{kind} of TP{tp}").into(),
                extra: None,
            });
        }
    }
    rankscope::model::build(
        "long".into(),
        events,
        Vec::new(),
        &rankscope::grammar::Knowledge::default(),
        None,
    )
}

/// `ranks` ranks of one synthetic start-up, stamps in whole seconds: every rank ends
/// weight loading at 2000 s, odd ranks one second later, and the last rank 600 s late
/// (and so every later phase of it).
fn many_rank_run(ranks: u32) -> Run {
    use rankscope::base::event::{Event, Origin, Rank};
    let t0 = chrono::NaiveDate::from_ymd_opt(2026, 1, 1)
        .and_then(|d| d.and_hms_opt(8, 0, 0))
        .expect("valid date");
    let steps: [(&str, i64); 9] = [
        ("dist_init_begin", 0),
        ("dist_init_end", 300),
        ("weight_load_begin", 300),
        ("weight_load_end", 2000),
        ("kv_budget", 2000),
        ("mem_pool_end", 2030),
        ("cuda_graph_begin", 2030),
        ("cuda_graph_end", 2380),
        ("ready", 2400),
    ];
    let mut events = Vec::new();
    let mut line = 0;
    for tp in 0..ranks {
        let lag = if tp == ranks - 1 {
            600
        } else {
            i64::from(tp % 2)
        };
        for (kind, s) in steps {
            line += 1;
            let s = if s >= 2000 { s + lag } else { s };
            events.push(Event {
                origin: Origin { source: 0, line },
                ts: Some(t0 + chrono::Duration::seconds(s)),
                ts_step_ms: 1000,
                year_inferred: false,
                rank: Some(Rank::tp(tp)),
                writer: None,
                time_only: false,
                kind: kind.into(),
                grammar: "synthetic".into(),
                fields: Default::default(),
                message: format!("{kind} of TP{tp}").into(),
                extra: None,
            });
        }
    }
    rankscope::model::build(
        "many".into(),
        events,
        Vec::new(),
        &rankscope::grammar::Knowledge::default(),
        None,
    )
}

/// 1,024 ranks: `a` turns the lanes into one row per phase. Weight loading ends, over
/// the 1,024 ranks: 512 even ranks of 0..1022 at 2000 s (33m20s), 511 odd ones at
/// 2001 s, TP1023 at 2600 s (43m20s); sorted, index 511 (the lower median of 1,024) is
/// the last of the 512 at 2000 s. TP1023 alone is late (odd ranks are one stamp step
/// later, which is no lateness).
#[test]
fn a_thousand_ranks_aggregate_into_phase_rows() {
    let mut app = App::new(many_rank_run(1024), None, false);
    assert!(!app.aggregate);
    keys(&mut app, &[KeyCode::Char('a')]);
    assert!(app.aggregate);
    let w = app
        .analysed
        .bands
        .iter()
        .find(|b| b.phase == rankscope::model::Phase::WeightLoad)
        .expect("weight_load band");
    assert_eq!(w.ranks, 1024);
    assert_eq!(w.first_start, 300.0);
    assert_eq!(
        (w.first_end, w.median_end, w.last_end),
        (2000.0, 2000.0, 2600.0)
    );
    assert_eq!(w.stragglers, 1);
    assert_eq!((w.unfinished, w.failed), (0, 0));
    let screen = render_text(&mut app, 120, 40);
    assert!(
        screen.contains("─ 1! 1024 ranks, ends 33m20s / 33m20s / 43m20s"),
        "weight_load row:\n{screen}"
    );
    // The tab bar, the legend (two lines at 120 columns: it wraps rather than losing
    // `! straggler`), then the axis.
    assert!(screen.lines().nth(2).is_some_and(|l| l == "! straggler"));
    assert!(screen
        .lines()
        .nth(3)
        .is_some_and(|l| l.starts_with("phase")));
    insta::assert_snapshot!("many_ranks_aggregate_120x40", screen);
    // Back to the rank lanes: TP0 first.
    keys(&mut app, &[KeyCode::Char('a')]);
    let screen = render_text(&mut app, 120, 40);
    assert!(screen.lines().any(|l| l.starts_with("TP0 ")), "{screen}");
}

#[test]
fn a_forty_minute_start_up_fits_the_width_and_zooms() {
    let mut app = App::new(long_run(), None, false);
    let screen = render_text(&mut app, 120, 40);
    assert!(screen.contains("┆10m"), "minute ticks expected:\n{screen}");
    assert!(
        screen.lines().any(|l| l.starts_with("TP3!")),
        "straggler mark:\n{screen}"
    );
    insta::assert_snapshot!("long_run_fit_120x40", screen);
    keys(&mut app, &[KeyCode::End]);
    chars(&mut app, "+++++");
    let screen = render_text(&mut app, 120, 40);
    assert!(
        screen.contains("cursor 50m") || screen.contains("cursor 40m"),
        "{screen}"
    );
    insta::assert_snapshot!("long_run_zoomed_end_120x40", screen);
}

#[test]
fn docs_list_every_key_of_the_help_overlay() {
    let doc = std::fs::read_to_string("docs/tui.md").expect("docs/tui.md");
    for (k, what) in input::HELP {
        assert!(
            doc.contains(&format!("| `{k}` | {what} |")),
            "docs/tui.md lacks the key row for {k}"
        );
    }
}

/// The captures in docs/tui.md are the snapshots, blank runs folded to one line: when a
/// snapshot changes, this says which capture to paste again
/// (`RANKSCOPE_UPDATE_DOCS=1 cargo test --test tui_render` pastes them).
#[test]
fn docs_captures_match_the_snapshots() {
    let doc = std::fs::read_to_string("docs/tui.md").expect("docs/tui.md");
    let update = std::env::var_os("RANKSCOPE_UPDATE_DOCS").is_some();
    let mut rewritten = doc.clone();
    let mut checked = 0;
    for part in doc.split("<!-- snapshot: ").skip(1) {
        let Some((name, rest)) = part.split_once(" -->\n```\n") else {
            panic!("malformed capture marker in docs/tui.md");
        };
        let Some((capture, _)) = rest.split_once("\n```") else {
            panic!("unclosed capture {name} in docs/tui.md");
        };
        let path = format!("tests/snapshots/tui_render__{name}.snap");
        let snap = std::fs::read_to_string(&path).expect("snapshot exists");
        let body = snap.splitn(3, "---\n").nth(2).unwrap_or_default();
        let mut folded: Vec<&str> = Vec::new();
        for line in body.trim_end_matches('\n').lines() {
            if line.trim().is_empty() && folded.last().is_some_and(|l| l.trim().is_empty()) {
                continue;
            }
            folded.push(line);
        }
        let folded = folded.join("\n");
        if update && capture != folded {
            let marker = format!("<!-- snapshot: {name} -->\n```\n");
            rewritten = rewritten.replacen(
                &format!("{marker}{capture}\n```"),
                &format!("{marker}{folded}\n```"),
                1,
            );
        } else {
            assert_eq!(
                capture, folded,
                "docs/tui.md capture {name} differs from {path}"
            );
        }
        checked += 1;
    }
    if rewritten != doc {
        std::fs::write("docs/tui.md", rewritten).expect("write docs/tui.md");
    }
    assert!(
        checked >= 5,
        "expected a capture of each view in docs/tui.md"
    );
}

#[test]
fn mouse_wheel_moves_the_rank_selection() {
    use crossterm::event::{Event, MouseEvent, MouseEventKind};
    let mut app = failing();
    let wheel = |kind| {
        Event::Mouse(MouseEvent {
            kind,
            column: 10,
            row: 5,
            modifiers: KeyModifiers::NONE,
        })
    };
    // It opens on the root, TP2; a notch of the wheel is three ranks.
    assert_eq!(app.rank_sel, 2);
    if let Some(m) = input::from_event(&wheel(MouseEventKind::ScrollDown), &app) {
        update(&mut app, m);
    }
    assert_eq!(app.rank_sel, 5);
    if let Some(m) = input::from_event(&wheel(MouseEventKind::ScrollUp), &app) {
        update(&mut app, m);
    }
    assert_eq!(app.rank_sel, 2);
}

#[test]
fn zoom_keeps_the_cursor_column_and_fit_restores_the_whole_run() {
    let mut app = failing();
    update(&mut app, Msg::Resize(120, 40));
    let fitted = app.scale;
    chars(&mut app, "llllllllllllllllllll");
    let col = (app.cursor_s - app.offset_s) / app.scale;
    chars(&mut app, "++");
    assert!((app.scale - fitted / 4.0).abs() < 1e-9);
    let col_after = (app.cursor_s - app.offset_s) / app.scale;
    assert!((col - col_after).abs() < 1.0, "{col} vs {col_after}");
    chars(&mut app, "=");
    assert!((app.scale - fitted).abs() < 1e-9 && app.offset_s == 0.0);
}

#[test]
fn zoom_out_stops_at_the_whole_run_and_zoom_in_at_a_hundredth_of_a_second() {
    let mut app = failing();
    update(&mut app, Msg::Resize(80, 24));
    let fitted = app.scale;
    chars(&mut app, "-");
    assert_eq!(app.scale, fitted, "zoomed out past the whole run");
    assert_eq!(app.status, "zoomed out to the whole run");
    chars(&mut app, "+-");
    assert_eq!(app.scale, fitted);
    assert_eq!(app.offset_s, 0.0);
    // The run spans 16 s (09:18:30 to 09:18:46): fitted to 80 − 6 label − 8 spare = 66
    // columns, 0.24 s a column; halving reaches 0.01 s after five presses (0.0076 is
    // clamped to 0.01), and a sixth does nothing.
    chars(&mut app, "+++++");
    assert!((app.scale - 0.01).abs() < 1e-12, "{}", app.scale);
    chars(&mut app, "+");
    assert!((app.scale - 0.01).abs() < 1e-12);
    assert!(app.status.starts_with("finest zoom"), "{}", app.status);
    let screen = render_text(&mut app, 80, 24);
    assert!(
        screen.contains("finest zoom: 0.01 s per column"),
        "{screen}"
    );
    // The next key clears the message.
    chars(&mut app, "l");
    assert!(app.status.is_empty());
}

#[test]
fn ctrl_l_asks_for_a_full_redraw() {
    let mut app = failing();
    let k = KeyEvent::new(KeyCode::Char('l'), KeyModifiers::CONTROL);
    let msg = input::from_key(k, &app).expect("Ctrl-L is mapped");
    assert_eq!(msg, Msg::Redraw);
    let cursor = app.cursor_s;
    update(&mut app, msg);
    // A redraw, not `l` (cursor right).
    assert!(app.redraw);
    assert_eq!(app.cursor_s, cursor);
}

#[test]
fn timeline_keeps_the_failure_line_when_the_lanes_fill_the_screen() {
    // 14 rows: the tab bar and key line leave 12; the legend wraps to 2 at 80 columns,
    // so the nine rows of axis and lanes would leave the footer one row. The lanes give
    // way: the cursor line and the oom line of the rank it opens on (the root, TP2,
    // marked ◀ as in its lane) still show.
    let mut app = failing();
    let screen = render_text(&mut app, 80, 14);
    assert!(screen.contains("TP2: cuda_graph   ✗oom at 11s"), "{screen}");
    assert!(
        screen
            .lines()
            .any(|l| l.starts_with("◀   11s oom ") && l.contains("OutOfMemoryError")),
        "the oom line is missing:\n{screen}"
    );
}

#[test]
fn event_filters_and_search_escape() {
    let mut app = failing();
    keys(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    let one_rank = app.visible_events().len();
    chars(&mut app, "r");
    let all = app.visible_events().len();
    assert!(all > one_rank, "{all} <= {one_rank}");
    chars(&mut app, "r");
    // TP0's 12 events (the footer of timeline_120x40): the phase edges are its 8 begin and end
    // lines (dist_init ×2, weight_load ×2, kv_budget, kv_cache_alloc, mem_pool_end,
    // cuda_graph_begin) and its 2 failure lines (error, oom); not custom_allreduce, a
    // line inside dist_init, nor the warning.
    assert_eq!(app.visible_events().len(), 12);
    chars(&mut app, "f");
    let edges: Vec<&str> = app
        .visible_events()
        .iter()
        .map(|&i| app.run.events[i].kind.as_str())
        .collect();
    assert_eq!(
        edges,
        [
            "dist_init_begin",
            "dist_init_end",
            "weight_load_begin",
            "weight_load_end",
            "kv_budget",
            "kv_cache_alloc",
            "mem_pool_end",
            "cuda_graph_begin",
            "error",
            "oom"
        ]
    );
    chars(&mut app, "rf");
    let problems = app.visible_events();
    assert!(!problems.is_empty());
    assert!(problems
        .iter()
        .all(|&i| matches!(app.run.events[i].kind.as_str(), "oom" | "error" | "warning")));
    let screen = render_text(&mut app, 80, 24);
    assert!(screen.contains("kinds: problems"), "{screen}");

    // While typing a search, q is a letter and Esc cancels the search, not the program.
    chars(&mut app, "/q");
    assert_eq!(app.search_input.as_deref(), Some("q"));
    assert!(!app.quit);
    keys(&mut app, &[KeyCode::Esc]);
    assert!(app.search_input.is_none() && !app.quit);
    chars(&mut app, "q");
    assert!(app.quit);
}

#[test]
fn memory_view_draws_the_snapshot_series_peak_oom_and_sites() {
    let mut app = with_snapshots("tp8-custom-ar");
    from_first_rank(&mut app);
    assert!(app.has_snapshots());
    keys(&mut app, &[KeyCode::Tab]);
    assert_eq!(app.view, View::Memory);
    let screen = render_text(&mut app, 120, 40);
    assert!(screen.contains("TP0 snapshot"), "{screen}");
    assert!(screen.contains("✗oom at"), "OOM marker missing:\n{screen}");
    assert!(screen.contains("▲ peak"), "peak marker missing:\n{screen}");
    assert!(screen.contains("init_custom_ar"), "site missing:\n{screen}");
    assert!(screen.contains("run time"), "clock not matched:\n{screen}");
    insta::assert_snapshot!("memory_snapshots_120x40", screen);
    let screen = render_text(&mut app, 80, 24);
    assert!(
        screen.contains("✗oom at 11.3s: asked 20.00 MiB in capture_graphs (model_runner.py)"),
        "the OOM is cut:\n{screen}"
    );
    // All four of TP0's live sites, the smallest (init_custom_ar) included.
    for site in [
        "load_weights",
        "kv_cache (",
        "capture_graphs (",
        "init_custom_ar",
    ] {
        assert!(screen.contains(site), "{site} missing:\n{screen}");
    }
    // Every legend entry, whole.
    assert!(screen.contains("·· free"), "{screen}");
    insta::assert_snapshot!("memory_snapshots_80x24", screen);
}

#[test]
fn detail_pane_scrolls_by_pages_and_stops_at_the_end() {
    let mut app = failing();
    from_first_rank(&mut app);
    keys(&mut app, &[KeyCode::Down, KeyCode::Tab, KeyCode::Tab]);
    chars(&mut app, "/oom");
    keys(&mut app, &[KeyCode::Enter, KeyCode::Enter]);
    assert!(app.detail);
    let top = render_text(&mut app, 80, 24);
    assert!(top.contains("lines 1-"), "{top}");
    // PgDn pages the pane, not the event list, while it is open.
    let sel = app.event_sel;
    keys(&mut app, &[KeyCode::PageDown]);
    assert_eq!(app.event_sel, sel);
    assert!(app.detail_scroll > 0);
    for _ in 0..20 {
        keys(&mut app, &[KeyCode::PageDown]);
    }
    let bottom = render_text(&mut app, 80, 24);
    assert!(
        bottom.contains("allowed_bytes"),
        "end of the text:\n{bottom}"
    );
    assert!(!bottom.contains("lines 1-"), "{bottom}");
    insta::assert_snapshot!("events_detail_scrolled_80x24", bottom);
    // One PgUp is enough to leave the end: the scroll never ran past it.
    let at_end = app.detail_scroll;
    keys(&mut app, &[KeyCode::PageUp]);
    assert!(app.detail_scroll < at_end);
    for _ in 0..20 {
        keys(&mut app, &[KeyCode::PageUp]);
    }
    assert_eq!(app.detail_scroll, 0);
    // J/K scroll by one line.
    chars(&mut app, "JJJK");
    assert_eq!(app.detail_scroll, 2);
    // Another event starts at its top.
    keys(&mut app, &[KeyCode::PageDown, KeyCode::Up]);
    assert_eq!(app.detail_scroll, 0);
}

#[test]
fn memory_table_follows_the_selection_past_the_last_row() {
    let mut app = failing();
    keys(&mut app, &[KeyCode::Tab]);
    for _ in 0..7 {
        keys(&mut app, &[KeyCode::Down]);
    }
    let screen = render_text(&mut app, 100, 10);
    assert!(screen.lines().any(|l| l.starts_with("TP7")), "{screen}");
    assert!(!screen.lines().any(|l| l.starts_with("TP0")), "{screen}");
    assert!(screen.contains("ranks 5-8 of 8"), "{screen}");
}

#[test]
fn loading_screen_shows_bytes_read_and_a_spinner() {
    use rankscope::tui::{render_loading_text, Loading};
    let mut screen = Loading::new("samples/tp8-custom-ar");
    screen.stage = "reading the logs of samples/tp8-custom-ar".into();
    screen.bytes = 19_000;
    screen.total = Some(38_192);
    let text = render_loading_text(&screen, 80, 24);
    assert!(text.contains("50%"), "{text}");
    assert!(text.contains("of logs read"), "{text}");
    insta::assert_snapshot!("loading_80x24", text);

    screen.total = None;
    screen.tick = 3;
    let text = render_loading_text(&screen, 80, 24);
    assert!(
        text.contains('⠸'),
        "spinner when the total is unknown:\n{text}"
    );
    assert!(!text.contains('%'), "{text}");

    screen.error = Some("samples/nope: no such file or directory".into());
    let text = render_loading_text(&screen, 80, 24);
    assert!(text.contains("could not load the run"), "{text}");
    assert!(text.contains("no such file"), "{text}");
    insta::assert_snapshot!("loading_error_80x24", text);
}

#[test]
fn worker_load_counts_log_bytes_and_attaches_snapshots() {
    use rankscope::tui::loading::{load_app, Progress};
    let gs = GrammarSet::new(GrammarSet::builtin_grammars().expect("grammars")).expect("set");
    let p = Progress::default();
    let app =
        load_app(&gs, Path::new("samples/tp8-custom-ar"), None, false, &p).expect("sample loads");
    assert_eq!(app.analysed.snaps.iter().flatten().count(), 8);
    assert!(app.analysed.snaps.iter().flatten().all(|s| s.clock_matched));
    let (_, bytes, total) = p.snapshot();
    let logs: u64 = ["server.log", "stdout.txt"]
        .iter()
        .filter_map(|f| std::fs::metadata(Path::new("samples/tp8-custom-ar").join(f)).ok())
        .map(|m| m.len())
        .sum();
    assert_eq!(total, Some(logs));
    assert!(bytes > 0 && bytes <= logs, "{bytes} of {logs}");

    let err = load_app(&gs, Path::new("samples/no-such-run"), None, false, &p)
        .err()
        .expect("a missing run fails");
    assert!(err.contains("no-such-run"), "{err}");
}
