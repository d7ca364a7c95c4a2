//! `rankscope tui`: the interactive timeline, memory, diff and event views.
//!
//! `app` holds state and the only function that changes it, `input` turns terminal events
//! into messages, `ui` lays out the frame and hands the view's area to `views` (one file
//! per view), which draw with `widgets`. This module owns the terminal: it is put back on
//! every way out, panics included.

pub mod app;
pub mod input;
pub(crate) mod layout;
pub mod loading;
pub mod ui;
pub(crate) mod views;
pub mod watch;
pub(crate) mod widgets;

use std::io::{self, Stdout};
use std::panic::PanicHookInfo;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crossterm::event::{
    DisableMouseCapture, EnableMouseCapture, Event as TermEvent, KeyCode, KeyEventKind,
    KeyModifiers,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::{CrosstermBackend, TestBackend};
use ratatui::Terminal;

pub use app::{App, Loading, Msg, View};

use crate::grammar::GrammarSet;

/// Why `rankscope tui` ended without showing the run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal could not be set up, drawn on or restored.
    #[error("terminal: {0}")]
    Terminal(#[from] io::Error),
    /// The run could not be read; the message was on screen until the user quit.
    #[error("{0}")]
    Load(String),
}

/// Whether the terminal is in the TUI's state. Restoring twice is not harmless: leaving
/// the alternate screen a second time restores the saved cursor again, and the shell then
/// overwrites the panic message printed in between.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back, once (the panic hook and the guard's drop both call it).
fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

type Hook = dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static;

/// Restores the terminal before the previous hook prints the panic, so the message lands
/// on a normal screen; the previous hook is put back when the TUI ends.
struct HookGuard {
    prev: Arc<Hook>,
}

impl HookGuard {
    fn install() -> HookGuard {
        let prev: Arc<Hook> = Arc::from(std::panic::take_hook());
        let chained = Arc::clone(&prev);
        std::panic::set_hook(Box::new(move |info| {
            restore();
            chained(info);
        }));
        HookGuard { prev }
    }
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        // Not while unwinding: replacing the hook from inside a panic aborts.
        if !std::thread::panicking() {
            let _ = std::panic::take_hook();
            let prev = Arc::clone(&self.prev);
            std::panic::set_hook(Box::new(move |info| prev(info)));
        }
    }
}

type Term = Terminal<CrosstermBackend<Stdout>>;

/// Runs `body` with the terminal in the TUI's state and puts it back however it ends.
fn with_terminal<T>(body: impl FnOnce(&mut Term) -> Result<T, TuiError>) -> Result<T, TuiError> {
    let _hook = HookGuard::install();
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let _guard = TerminalGuard;
    crossterm::execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let out = body(&mut terminal);
    terminal.show_cursor()?;
    out
}

fn event_loop(terminal: &mut Term, app: &mut App) -> Result<(), TuiError> {
    let size = terminal.size()?;
    update(app, Msg::Resize(size.width, size.height));
    // Redraw only after something happened: `read` blocks until the next key, mouse or
    // resize event.
    while !app.quit {
        if std::mem::take(&mut app.redraw) {
            terminal.clear()?;
        }
        terminal.draw(|f| ui::draw(f, app))?;
        let ev = crossterm::event::read()?;
        if let Some(msg) = input::from_event(&ev, app) {
            update(app, msg);
        }
    }
    Ok(())
}

/// Applies a message, then measures what the new state's scrolled panes hold: `app`
/// changes state without knowing how the views wrap their text, `ui` measures without
/// changing state.
pub fn update(app: &mut App, msg: Msg) {
    app::update(app, msg);
    let rooms = ui::scroll_rooms(app);
    app::settle(app, rooms);
}

/// Whether a key on the loading screen asks to leave.
fn quits(ev: &TermEvent) -> bool {
    let TermEvent::Key(k) = ev else {
        return false;
    };
    k.kind != KeyEventKind::Release
        && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
            || (k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c')))
}

/// Opens the terminal at once and reads the run (and baseline) on a worker thread, with a
/// loading screen until it is ready. Quitting while loading leaves the worker to die with
/// the process; a load error stays on screen until q and is then returned.
pub fn run_paths(
    gs: GrammarSet,
    run_paths: &[PathBuf],
    vs: &[PathBuf],
    opts: crate::session::LoadOptions,
    diff: crate::analysis::diff::DiffOptions,
    color: bool,
) -> Result<(), TuiError> {
    let progress = Arc::new(loading::Progress::default());
    let (tx, rx) = mpsc::channel();
    let title = run_paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" + ");
    {
        let progress = Arc::clone(&progress);
        let run_paths = run_paths.to_vec();
        let vs = vs.to_vec();
        std::thread::Builder::new()
            .name("tui-load".into())
            .spawn(move || {
                let r =
                    loading::load_app_paths(&gs, &run_paths, &vs, &opts, diff, color, &progress);
                // The receiver is gone only when the user quit first.
                let _ = tx.send(r);
            })?;
    }
    let mut screen = Loading::new(&title);
    with_terminal(|terminal| {
        loop {
            if screen.error.is_none() {
                match rx.try_recv() {
                    Ok(Ok(mut app)) => return event_loop(terminal, &mut app),
                    Ok(Err(e)) => screen.error = Some(e),
                    Err(mpsc::TryRecvError::Empty) => {}
                    Err(mpsc::TryRecvError::Disconnected) => {
                        screen.error = Some("the loading thread stopped".into());
                    }
                }
                screen.refresh(&progress);
            }
            terminal.draw(|f| views::loading::draw(f, &screen, color))?;
            screen.tick = screen.tick.wrapping_add(1);
            // Wake up often enough to move the spinner and notice the worker finishing.
            if crossterm::event::poll(Duration::from_millis(100))? {
                let ev = crossterm::event::read()?;
                if quits(&ev) {
                    return match screen.error.take() {
                        Some(e) => Err(TuiError::Load(e)),
                        None => Ok(()),
                    };
                }
            }
        }
    })
}

/// `WxH` (`120x40`) as a terminal size, for `tui --first-frame`.
pub fn parse_size(s: &str) -> Result<(u16, u16), String> {
    let bad = || format!("expected a size like 120x40, got {s:?}");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u16, u16) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    if w == 0 || h == 0 {
        return Err(bad());
    }
    // The frame is a buffer of w × h cells drawn in memory: 65535x65535 asked for 160 GiB.
    if w > MAX_FRAME_SIDE || h > MAX_FRAME_SIDE {
        return Err(format!(
            "{w}x{h} is larger than a terminal: at most {MAX_FRAME_SIDE}x{MAX_FRAME_SIDE}"
        ));
    }
    Ok((w, h))
}

/// The largest side of a `--first-frame` (a 4K screen with a small font is ~600 columns).
pub(crate) const MAX_FRAME_SIDE: u16 = 1000;

/// Loads the run as the TUI's worker does and draws the first screen the user would see,
/// as text, without a terminal: the work between `rankscope tui` and its first screen,
/// measurable by `benches/tui_first_screen.sh`.
pub fn first_frame(
    gs: &GrammarSet,
    run_paths: &[PathBuf],
    vs: &[PathBuf],
    opts: &crate::session::LoadOptions,
    diff: crate::analysis::diff::DiffOptions,
    (width, height): (u16, u16),
) -> Result<String, TuiError> {
    let progress = loading::Progress::default();
    let mut app = loading::load_app_paths(gs, run_paths, vs, opts, diff, false, &progress)
        .map_err(TuiError::Load)?;
    Ok(render_text(&mut app, width, height))
}

/// The loading screen as text lines, for tests and docs/tui.md.
pub fn render_loading_text(screen: &Loading, width: u16, height: u16) -> String {
    render_with(width, height, |f| views::loading::draw(f, screen, false))
}

fn render_with(width: u16, height: u16, draw: impl FnOnce(&mut ratatui::Frame)) -> String {
    // A TestBackend cannot fail: its error type is `Infallible` (ratatui 0.30).
    let Ok(mut terminal) = Terminal::new(TestBackend::new(width, height));
    let Ok(_) = terminal.draw(draw);
    let buf = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            if let Some(c) = buf.cell((x, y)) {
                line.push_str(c.symbol());
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The screen as text lines, for tests and the captures in docs/tui.md.
pub fn render_text(app: &mut App, width: u16, height: u16) -> String {
    update(app, Msg::Resize(width, height));
    render_with(width, height, |f| ui::draw(f, app))
}
