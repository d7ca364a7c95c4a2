//! `rankscope watch`: follows a run as it is written (`ingest::follow`), loads what was
//! read so far through the same loader as `summary` after each batch of new lines, and
//! reports what changed (`analysis::early`): one line per change, or the live board on a
//! terminal. Ends when every rank is ready or the run failed, with `summary`'s text (or
//! JSON) and its exit code; `--timeout` ends it as incomplete.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::Result;
use notify::Watcher;
use rankscope::analysis::attribute;
use rankscope::analysis::diff::{diff_with, DiffOptions};
use rankscope::analysis::early::{Change, LogNow, Tracker};
use rankscope::ingest::follow::{FollowNote, Follower};
use rankscope::ingest::scan::EventBudget;
use rankscope::model::notes::ReadNote;
use rankscope::render::text::notes::read_note;
use rankscope::render::text::watch as words;
use rankscope::render::{self, json, Style};
use rankscope::report::{RunReport, RunState};
use rankscope::session::{Inputs, LoadError, Session};
use rankscope::tui::watch::LiveBoard;

use super::{out, out_json, LogContext};

/// How often the files are looked at without file events (`--poll`): a line written
/// reaches the board within this.
const POLL: Duration = Duration::from_millis(100);
/// A replay's channels are looked at this often: at `--replay 20` a second of the log
/// passes in 50 ms.
const REPLAY_POLL: Duration = Duration::from_millis(10);
/// With file events, a look anyway this often (an event lost, a file on a filesystem that
/// sends none among others that do).
const SAFETY_POLL: Duration = Duration::from_secs(1);
/// New rank files are looked for this often when the files are polled; with file events,
/// at every creation event and this often anyway (listing 128 node directories each
/// second was most of an idle watch's CPU).
const DISCOVER_EVERY: Duration = Duration::from_secs(1);
const DISCOVER_EVERY_WITH_EVENTS: Duration = Duration::from_secs(10);
/// After a failure, the other ranks' last lines (their consequence, their termination)
/// are waited for until nothing new came for this long.
const SETTLE: Duration = Duration::from_secs(2);
/// Without new lines, "now" moves on and the board is redrawn this often: the time in
/// phase grows on screen, and a run silent everywhere still gets its time warnings.
const TICK: Duration = Duration::from_secs(1);

pub struct WatchArgs<'a> {
    pub run: &'a [PathBuf],
    pub vs: &'a [PathBuf],
    pub plain: bool,
    pub timeout: Option<f64>,
    pub json: bool,
    pub time_tolerance: f64,
    pub poll: bool,
    pub replay: Option<f64>,
    pub stats: bool,
}

/// What the loads cost (`--stats`): the watch loop's CPU time spent in each load and its
/// analysis, and the process's at the end.
#[derive(Default)]
struct Stats {
    loads: u64,
    cpu_s: Vec<f64>,
    lines: u64,
}

/// The watch loop's own CPU time so far, seconds: Linux's per-thread schedstat (in ns),
/// read without `unsafe`; 0 where there is none. The loads' parallel part (rayon) runs
/// elsewhere and is in [`process_cpu_s`] only.
fn cpu_now() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// The whole process's CPU time (user + system, every thread), seconds, from
/// /proc/self/stat in clock ticks (USER_HZ, 100 on Linux): 10 ms steps.
fn process_cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start after its ')'.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are the 14th and 15th fields of the line, 12th and 13th after ')'.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}

impl Stats {
    fn say(&self, total_cpu_s: f64, wall_s: f64) {
        let mut v = self.cpu_s.clone();
        v.sort_by(f64::total_cmp);
        let med = v.get(v.len() / 2).copied().unwrap_or(0.0);
        let max = v.last().copied().unwrap_or(0.0);
        let sum: f64 = v.iter().sum();
        eprintln!(
            "watch stats: {} loads of {} lines at the end; CPU per load median {:.2} ms, max {:.2} ms, all loads {:.1} ms; process CPU {:.1} ms over {:.1} s",
            self.loads,
            self.lines,
            med * 1e3,
            max * 1e3,
            sum * 1e3,
            total_cpu_s * 1e3,
            wall_s
        );
    }
}

/// Where the changes go: lines on stdout (or stderr under `--json`), or the live board.
pub trait Board {
    fn lines(&mut self, lines: &[String]) -> Result<()>;
    /// The run as loaded now, for a board that draws it whole.
    fn show(
        &mut self,
        _loaded: &Session,
        _warnings: &[String],
        _now: Option<LogNow>,
    ) -> Result<()> {
        Ok(())
    }
    /// No new line: "now" moved on (the time in phase grows).
    fn tick(
        &mut self,
        _run: &rankscope::model::Run,
        _warnings: &[String],
        _now: LogNow,
    ) -> Result<()> {
        Ok(())
    }
    /// The user asked to stop (the live board's `q`).
    fn quit_asked(&mut self) -> bool {
        false
    }
}

struct Lines {
    to_stderr: bool,
}

impl Board for Lines {
    fn lines(&mut self, lines: &[String]) -> Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut text = lines.join("\n");
        text.push('\n');
        if self.to_stderr {
            let mut e = std::io::stderr().lock();
            e.write_all(text.as_bytes())?;
            e.flush()?;
            Ok(())
        } else {
            out(&text)
        }
    }
}

impl Board for LiveBoard {
    fn lines(&mut self, lines: &[String]) -> Result<()> {
        Ok(self.push_lines(lines)?)
    }
    fn show(&mut self, loaded: &Session, warnings: &[String], now: Option<LogNow>) -> Result<()> {
        Ok(LiveBoard::show(self, &loaded.run, warnings, now)?)
    }
    fn tick(
        &mut self,
        run: &rankscope::model::Run,
        warnings: &[String],
        now: LogNow,
    ) -> Result<()> {
        Ok(LiveBoard::tick(self, run, warnings, now)?)
    }
    fn quit_asked(&mut self) -> bool {
        // A terminal that cannot be read any more cannot ask either.
        LiveBoard::quit_asked(self).unwrap_or(false)
    }
}

/// How the watch ended.
enum End {
    Decided,
    TimedOut,
    InputEnded,
    Quit,
}

pub fn run(cx: &LogContext, a: WatchArgs) -> Result<u8> {
    let plain = a.plain || a.json || !std::io::stdout().is_terminal();
    let style = if plain && (a.plain || a.json) {
        Style::plain().with_width(cx.style.width)
    } else {
        cx.style
    };
    let baseline = if a.vs.is_empty() {
        None
    } else {
        Some(cx.load(a.vs)?)
    };
    let mut board: Box<dyn Board> = if plain {
        Box::new(Lines { to_stderr: a.json })
    } else {
        Box::new(LiveBoard::open(cx.style.color)?)
    };
    let result = follow_run(cx, &a, baseline.as_ref(), board.as_mut(), style);
    // The live board gives the terminal back before the summary is printed.
    drop(board);
    let (end, last, notes) = result?;
    finish(&a, end, last, notes, style)
}

/// The events to wait on: file events from `notify` (inotify, kqueue, FSEvents), or
/// none under `--poll` or when the platform gives none (then the loop polls).
fn file_events(
    dirs: &[PathBuf],
    poll: bool,
) -> (
    Option<notify::RecommendedWatcher>,
    mpsc::Receiver<bool>,
    Option<String>,
) {
    let (tx, rx) = mpsc::channel();
    if poll {
        return (None, rx, None);
    }
    let handler = move |ev: notify::Result<notify::Event>| {
        if let Ok(ev) = ev {
            let _ = tx.send(matches!(ev.kind, notify::EventKind::Create(_)));
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => return (None, rx, Some(e.to_string())),
    };
    for d in dirs {
        if let Err(e) = watcher.watch(d, notify::RecursiveMode::Recursive) {
            return (None, rx, Some(format!("{}: {e}", d.display())));
        }
    }
    (Some(watcher), rx, None)
}

type Followed = (End, Option<Session>, Vec<ReadNote>);

/// When the loop looks at the files: at file events (the watcher lives as long as this),
/// or on a tick.
struct Looking {
    _watcher: Option<notify::RecommendedWatcher>,
    events: mpsc::Receiver<bool>,
    no_events: Option<String>,
    tick: Duration,
    discover_every: Duration,
}

fn how_to_look(follower: &Follower, a: &WatchArgs) -> Looking {
    let env_poll = std::env::var("RANKSCOPE_WATCH_POLL").is_ok_and(|v| v == "1");
    // A replay's lines come through channels: no file to watch.
    let poll = a.poll || env_poll || a.replay.is_some();
    let (watcher, events, no_events) = file_events(&follower.watch_dirs(), poll);
    let (tick, discover_every) = match (&watcher, a.replay) {
        (_, Some(_)) => (REPLAY_POLL, DISCOVER_EVERY),
        (Some(_), None) => (SAFETY_POLL, DISCOVER_EVERY_WITH_EVENTS),
        (None, None) => (POLL, DISCOVER_EVERY),
    };
    Looking {
        _watcher: watcher,
        events,
        no_events,
        tick,
        discover_every,
    }
}

fn follow_run(
    cx: &LogContext,
    a: &WatchArgs,
    baseline: Option<&Session>,
    board: &mut dyn Board,
    style: Style,
) -> Result<Followed> {
    let budget = EventBudget::default();
    let mut follower = match a.replay {
        Some(speed) => Follower::replay(&cx.grammars, &budget, a.run, speed)?,
        None => Follower::new(&cx.grammars, &budget, a.run)?,
    };
    let look = how_to_look(&follower, a);
    let (tick, discover_every, events) = (look.tick, look.discover_every, &look.events);
    let mut notes: Vec<ReadNote> = Vec::new();
    if let Some(why) = &look.no_events {
        let note = ReadNote::NoFileEvents { why: why.clone() };
        board.lines(&[format!("note      {}", read_note(&note))])?;
        notes.push(note);
    }
    let started = Instant::now();
    let deadline = a.timeout.map(|s| started + Duration::from_secs_f64(s));
    let mut watched = Watched {
        tracker: Tracker::default(),
        config_said: baseline.is_none(),
        warnings: Vec::new(),
        stats: Stats::default(),
        last: None,
        state: None,
        anchor: None,
        last_tick: Instant::now(),
    };
    let speed = a.replay.unwrap_or(1.0);
    let mut last_new = Instant::now();
    let mut last_discover = Instant::now();
    let mut dirty = true;
    let result = loop {
        if follower.poll() > 0 {
            dirty = true;
            last_new = Instant::now();
        }
        let new_notes: Vec<FollowNote> = follower.take_notes();
        if !new_notes.is_empty() {
            dirty = true;
            board.lines(
                &new_notes
                    .iter()
                    .map(|n| format!("note      {}", words::follow_note(n)))
                    .collect::<Vec<_>>(),
            )?;
            notes.extend(new_notes.into_iter().map(ReadNote::Follow));
        }
        if dirty {
            dirty = false;
            watched.load(cx, a, &follower, baseline, board, style)?;
        } else if watched.last_tick.elapsed() >= TICK {
            watched.tick(a, speed, baseline, board, style)?;
        }
        if let Some(end) = ended(watched.state, last_new) {
            break end;
        }
        if follower.input_ended() {
            break End::InputEnded;
        }
        if board.quit_asked() {
            break End::Quit;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break End::TimedOut;
        }
        let wait = deadline.map_or(tick, |d| {
            tick.min(d.saturating_duration_since(Instant::now()))
        });
        let mut created = false;
        match events.recv_timeout(wait) {
            Ok(c) => {
                created |= c;
                while let Ok(c) = events.try_recv() {
                    created |= c;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // No watcher (polling, a replay): nothing will ever come, so the tick is a sleep.
            Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
        }
        if created || last_discover.elapsed() >= discover_every {
            last_discover = Instant::now();
            follower.discover(false)?;
        }
    };
    let closing = follower.closing_notes();
    board.lines(
        &closing
            .iter()
            .map(|n| format!("note      {}", words::follow_note(n)))
            .collect::<Vec<_>>(),
    )?;
    notes.extend(closing.into_iter().map(ReadNote::Follow));
    if a.stats {
        (watched.stats).say(process_cpu_s(), started.elapsed().as_secs_f64());
    }
    Ok((result, watched.last, notes))
}

/// What the watch knows between looks.
struct Watched {
    tracker: Tracker,
    config_said: bool,
    /// Every warning's headline so far, for the board.
    warnings: Vec<String>,
    stats: Stats,
    last: Option<Session>,
    /// Computed once per load, not per tick.
    state: Option<RunState>,
    /// The run's latest stamp and when it was first read: "now" on the log's clock
    /// moves on from it with the wall clock ([`LogNow`]).
    anchor: Option<(chrono::NaiveDateTime, Instant)>,
    last_tick: Instant,
}

impl Watched {
    /// Loads what was read so far and reports what changed.
    fn load(
        &mut self,
        cx: &LogContext,
        a: &WatchArgs,
        follower: &Follower,
        baseline: Option<&Session>,
        board: &mut dyn Board,
        style: Style,
    ) -> Result<()> {
        let cpu_before = cpu_now();
        let Some(loaded) = load_now(cx, a.run, follower)? else {
            return Ok(());
        };
        let mut lines = Vec::new();
        if !self.config_said && loaded.run.config.is_some() {
            self.config_said = true;
            if let Some(b) = baseline {
                lines.extend(config_lines(&b.run, &loaded.run, style));
            }
        }
        let latest = LogNow::at_latest_line(&loaded.run);
        if latest.map(|l| l.latest) != self.anchor.map(|x| x.0) {
            self.anchor = latest.map(|l| (l.latest, Instant::now()));
        }
        // Bytes that hold no start-up event (progress bars, request traffic) make a load
        // but move no rank: "now" still runs on from the latest event's first reading, as
        // on a tick, or a stream of such lines would keep every time warning away.
        let now = self.now(a.replay.unwrap_or(1.0));
        let changes =
            (self.tracker).update_at(&loaded.run, baseline.map(|b| &b.run), a.time_tolerance, now);
        lines.extend(worded(&mut self.warnings, &loaded.run, &changes, style));
        self.stats.loads += 1;
        self.stats.cpu_s.push(cpu_now() - cpu_before);
        self.stats.lines = follower.lines();
        board.lines(&lines)?;
        board.show(&loaded, &self.warnings, now)?;
        self.state = Some(RunReport::of(&loaded.run).state(&loaded.run));
        self.last = Some(loaded);
        self.last_tick = Instant::now();
        Ok(())
    }

    /// "Now" on the log's clock: the latest event's stamp, moved on by the wall-clock time
    /// since that stamp was first read (× the replay's speed).
    fn now(&self, speed: f64) -> Option<LogNow> {
        let (latest, seen) = self.anchor?;
        Some(LogNow {
            latest,
            silent_s: rankscope::base::units::Seconds(seen.elapsed().as_secs_f64() * speed),
        })
    }

    /// No new line since the last look: "now" moves on by the wall clock, so a rank
    /// silent in a phase past the baseline's window of it is warned of, and the board's
    /// time in phase grows.
    fn tick(
        &mut self,
        a: &WatchArgs,
        speed: f64,
        baseline: Option<&Session>,
        board: &mut dyn Board,
        style: Style,
    ) -> Result<()> {
        self.last_tick = Instant::now();
        let (Some(loaded), Some(now)) = (&self.last, self.now(speed)) else {
            return Ok(());
        };
        // Only the time warnings depend on "now", and they need a baseline: without one a
        // tick costs nothing but the board's redraw (1,024 idle files stay cheap).
        if baseline.is_some() {
            let changes = (self.tracker).update_at(
                &loaded.run,
                baseline.map(|b| &b.run),
                a.time_tolerance,
                Some(now),
            );
            let lines = worded(&mut self.warnings, &loaded.run, &changes, style);
            board.lines(&lines)?;
        }
        board.tick(&loaded.run, &self.warnings, now)?;
        Ok(())
    }
}

/// The changes in words; each warning's headline is kept for the board.
fn worded(
    warnings: &mut Vec<String>,
    run: &rankscope::model::Run,
    changes: &[Change],
    style: Style,
) -> Vec<String> {
    let mut lines = Vec::new();
    for c in changes {
        let ls = words::change_lines(run, c, style);
        // The board keeps each warning's headline; its remedy is in the changes pane and
        // in the final summary.
        if let (Change::Warning(_), Some(head)) = (c, ls.first()) {
            warnings.push(head.clone());
        }
        lines.extend(ls);
    }
    lines
}

/// The run as read so far, through `summary`'s loader; `None` while nothing in it is a
/// start-up line yet.
fn load_now(cx: &LogContext, paths: &[PathBuf], follower: &Follower) -> Result<Option<Session>> {
    let read = follower.given();
    let inputs = Inputs {
        paths: paths.to_vec(),
        groups: read.groups,
    };
    let mut opts = cx.opts.clone();
    opts.given = Some(Arc::new(read.scans));
    match Session::load(&cx.grammars, &inputs, &opts, &|_, _| {}) {
        Ok(l) => Ok(Some(l)),
        Err(LoadError::NotAStartupLog { .. } | LoadError::NothingRead { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Ready, or failed and nothing new for `SETTLE` after it.
fn ended(state: Option<RunState>, last_new: Instant) -> Option<End> {
    match state? {
        RunState::Ready => Some(End::Decided),
        // A failure's traceback, and the other ranks' consequences, are still being
        // written when the failure is first seen: what settles it is silence.
        RunState::Failed => (last_new.elapsed() >= SETTLE).then_some(End::Decided),
        _ => None,
    }
}

/// The configuration differences, at the start (as `diff`'s config section).
fn config_lines(
    baseline: &rankscope::model::Run,
    run: &rankscope::model::Run,
    style: Style,
) -> Vec<String> {
    let d = diff_with(baseline, run, DiffOptions::default());
    render::text::diff::config_lines(&d, 40)
        .into_iter()
        .map(|l| style.dim(&format!("config    {l}")))
        .collect()
}

fn finish(
    a: &WatchArgs,
    end: End,
    last: Option<Session>,
    notes: Vec<ReadNote>,
    style: Style,
) -> Result<u8> {
    let Some(mut loaded) = last else {
        let why = match end {
            End::TimedOut => words::timed_out(a.timeout.unwrap_or(0.0)),
            _ => "watch: no start-up line was read".to_string(),
        };
        eprintln!("{why}");
        return Ok(RunState::Incomplete.exit_code());
    };
    loaded.run.notes.extend(notes);
    let r = &loaded.run;
    let report = RunReport::of(r);
    let state = report.state(r);
    if a.json {
        // As `summary --json`: the breakdown split by the snapshots.
        let mut report = report.clone();
        report.memory = report.memory.with_snapshots(r, &loaded.snapshots().matched);
        out_json(&json::summary_doc(r, &report, &loaded.identity()))?;
    } else {
        let mut text = render::text::summary::summary(r, &report, false, style);
        // As `summary`: a failed run's snapshots name the OOM's site.
        if r.ranks.iter().any(|x| x.failure.is_some()) {
            let ev = attribute::snapshot_evidence(r, &[], &loaded.snapshots().matched);
            text.push_str(&render::text::diff::summary_snapshot_section(&ev, style));
        }
        out(&text)?;
    }
    let code = match end {
        End::TimedOut if state != RunState::Failed => {
            let line = words::timed_out(a.timeout.unwrap_or(0.0));
            if a.json {
                eprintln!("{line}");
            } else {
                out(&format!("{line}\n"))?;
            }
            RunState::Incomplete.exit_code()
        }
        _ => state.exit_code(),
    };
    Ok(code)
}
