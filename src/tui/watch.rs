//! `watch`'s live board on a terminal: the TUI's Timeline view of the run as read so far
//! (a lane per rank growing as its phases are reached), the early warnings under it, and
//! the latest changes as `--plain` words them. Redrawn after each load; `q`, Esc or
//! Ctrl-C leaves (the run's summary is then printed as for the end of the watch).

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use crossterm::event::{self, Event as TermEvent};
use crossterm::terminal::{enable_raw_mode, EnterAlternateScreen};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::Terminal;

use super::app::{App, Snapshots};
use super::{quits, update, HookGuard, Msg, Term, TerminalGuard, ACTIVE};
use crate::analysis::early::{self, LogNow, RankStatus};
use crate::base::text::sanitize;
use crate::model::Run;
use crate::render::text::watch::status_rows;

/// Change lines kept for the board's lower pane.
const RECENT: usize = 200;

/// `watch`'s full-screen board: the ranks' status as the logs grow, and the latest change
/// lines.
pub struct LiveBoard {
    terminal: Term,
    app: Option<App>,
    warnings: Vec<String>,
    /// Per rank (or per phase, with many ranks): where it is and for how long.
    status: Vec<RankStatus>,
    recent: VecDeque<String>,
    color: bool,
    quit: bool,
    // Dropped last: the terminal is put back after the board's last draw.
    _guard: TerminalGuard,
    _hook: HookGuard,
}

impl LiveBoard {
    /// Takes the terminal (alternate screen, raw mode) until the board is dropped.
    pub fn open(color: bool) -> io::Result<LiveBoard> {
        let hook = HookGuard::install();
        enable_raw_mode()?;
        ACTIVE.store(true, std::sync::atomic::Ordering::SeqCst);
        let guard = TerminalGuard;
        crossterm::execute!(io::stdout(), EnterAlternateScreen)?;
        let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        let mut board = LiveBoard {
            terminal,
            app: None,
            warnings: Vec::new(),
            status: Vec::new(),
            recent: VecDeque::new(),
            color,
            quit: false,
            _guard: guard,
            _hook: hook,
        };
        board.draw()?;
        Ok(board)
    }

    /// Change lines (as `--plain` prints them), newest last.
    pub fn push_lines(&mut self, lines: &[String]) -> io::Result<()> {
        for l in lines {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(sanitize(l));
        }
        self.draw()
    }

    /// The run as read now, and every warning so far.
    pub fn show(&mut self, run: &Run, warnings: &[String], now: Option<LogNow>) -> io::Result<()> {
        let know = crate::grammar::builtin_knowledge().clone();
        self.app = Some(App::from_loaded(
            run.clone(),
            None,
            Snapshots::default(),
            know,
            self.color,
        ));
        self.warnings = warnings.iter().map(|w| sanitize(w)).collect();
        self.status = early::status(run, now);
        self.draw()
    }

    /// No new line: "now" moved on. The open phases grow to it on the timeline, the
    /// status rows count the time in phase to it.
    pub fn tick(&mut self, run: &Run, warnings: &[String], now: LogNow) -> io::Result<()> {
        self.warnings = warnings.iter().map(|w| sanitize(w)).collect();
        self.status = early::status(run, Some(now));
        if let (Some(app), Some(start)) = (self.app.as_mut(), run.start) {
            let now_s = (now.time() - start).num_milliseconds() as f64 / 1000.0;
            grow_open_phases(app, &self.status, now_s);
        }
        self.draw()
    }

    /// Reads the keys typed since the last call: true once `q`, Esc or Ctrl-C was.
    pub fn quit_asked(&mut self) -> io::Result<bool> {
        while event::poll(Duration::ZERO)? {
            let ev = event::read()?;
            if quits(&ev) {
                self.quit = true;
            }
            if let TermEvent::Resize(..) = ev {
                self.draw()?;
            }
        }
        Ok(self.quit)
    }

    fn draw(&mut self) -> io::Result<()> {
        let size = self.terminal.size()?;
        let warn_h = (self.warnings.len() as u16).min(size.height / 3);
        let status_h = (self.status.len() as u16).min(size.height / 4);
        let timeline_h = size.height.saturating_sub(warn_h + status_h + 8).max(6);
        if let Some(app) = self.app.as_mut() {
            update(app, Msg::Resize(size.width, timeline_h));
        }
        let (app, warnings, recent, color) = (&self.app, &self.warnings, &self.recent, self.color);
        let status = status_rows(&self.status, usize::from(status_h));
        self.terminal.draw(|f| {
            let [head, timeline, status_area, warn, log] = Layout::vertical([
                Constraint::Length(1),
                Constraint::Length(timeline_h),
                Constraint::Length(status_h),
                Constraint::Length(warn_h),
                Constraint::Min(1),
            ])
            .areas(f.area());
            let title = match app {
                Some(a) => format!(
                    "rankscope watch  {}  {} ranks  (q quits)",
                    sanitize(&a.run.name),
                    a.run.worker_ranks().count()
                ),
                None => "rankscope watch  waiting for the first start-up line  (q quits)".into(),
            };
            f.render_widget(
                Paragraph::new(title).style(Style::new().add_modifier(Modifier::BOLD)),
                head,
            );
            if let Some(a) = app {
                super::views::timeline::draw(f, a, timeline);
            }
            let rows: Vec<Line> = status.iter().map(|l| Line::raw(l.clone())).collect();
            f.render_widget(Paragraph::new(rows), status_area);
            let warn_style = super::widgets::warn_style(color);
            let wl: Vec<Line> = warnings
                .iter()
                .map(|w| Line::styled(w.clone(), warn_style))
                .collect();
            // One row per warning, cut at the edge: every warning stays in sight.
            f.render_widget(Paragraph::new(wl), warn);
            let rows = usize::from(log.height);
            let tail: Vec<Line> = recent
                .iter()
                .skip(recent.len().saturating_sub(rows))
                .map(|l| Line::raw(l.clone()))
                .collect();
            f.render_widget(Paragraph::new(tail), log);
        })?;
        Ok(())
    }
}

/// Draws the phase each undecided rank is still in up to `now_s` (seconds since the run's
/// start), and widens the time axis to it.
fn grow_open_phases(app: &mut App, status: &[RankStatus], now_s: f64) {
    for st in status.iter().filter(|s| s.in_phase_s.is_some()) {
        let Some(lane) = app.analysed.lanes.iter_mut().find(|l| l.rank == st.rank) else {
            continue;
        };
        if let Some(seg) = lane.segments.last_mut() {
            if !seg.complete && seg.phase == st.phase && now_s > seg.end {
                seg.end = now_s;
            }
        }
    }
    app.extend_span(now_s);
}
