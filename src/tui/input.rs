//! Terminal events to messages. Which key means what lives here and in the help text only.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use super::app::{App, Msg, View};

/// The key map shown by `?` and in docs/tui.md.
pub const HELP: &[(&str, &str)] = &[
    ("Tab / Shift-Tab", "next / previous view"),
    ("← → / h l", "move the time cursor (Shift: 10 columns)"),
    (
        "+ / -",
        "zoom in / out around the cursor, out to the whole run",
    ),
    (
        "= / Home / End",
        "fit the run to the width / cursor to start / end",
    ),
    ("↑ ↓ / j k", "previous / next rank (Events: event)"),
    (
        "a",
        "Timeline: one row per rank / per phase across all ranks",
    ),
    (
        "PgUp / PgDn",
        "ten rows up / down; a page of the Diff view or detail pane",
    ),
    ("J / K", "Events, detail open: scroll the detail a line"),
    ("mouse wheel", "scroll rows"),
    ("/", "search event messages; Enter to run it"),
    ("n / N", "next / previous match"),
    ("Enter", "Events: show or hide the detail pane"),
    ("r", "Events: selected rank only / all ranks"),
    (
        "f",
        "Events: cycle kind filter (all, phase edges, problems)",
    ),
    ("?", "show or hide this help"),
    ("!", "the root failure: Events view on its line"),
    ("Esc", "close help, search or detail (never quits)"),
    ("Ctrl-L", "redraw the screen"),
    ("q / Ctrl-C", "quit"),
];

/// The message a terminal event means on the current screen; `None` for an event that means
/// nothing there.
pub fn from_event(ev: &Event, app: &App) -> Option<Msg> {
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => from_key(*k, app),
        Event::Resize(w, h) => Some(Msg::Resize(*w, *h)),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollUp => Some(Msg::Move(-3)),
            MouseEventKind::ScrollDown => Some(Msg::Move(3)),
            MouseEventKind::ScrollLeft => Some(Msg::MoveTime(-3)),
            MouseEventKind::ScrollRight => Some(Msg::MoveTime(3)),
            _ => None,
        },
        _ => None,
    }
}

/// The message a key means on the current screen (help, search and detail read keys their
/// own way).
pub fn from_key(k: KeyEvent, app: &App) -> Option<Msg> {
    if k.modifiers.contains(KeyModifiers::CONTROL) {
        match k.code {
            KeyCode::Char('c') => return Some(Msg::Quit),
            KeyCode::Char('l') => return Some(Msg::Redraw),
            _ => {}
        }
    }
    if app.search_input.is_some() {
        return match k.code {
            KeyCode::Esc => Some(Msg::Back),
            KeyCode::Enter => Some(Msg::SearchSubmit),
            KeyCode::Backspace => Some(Msg::SearchBackspace),
            KeyCode::Char(c) => Some(Msg::SearchChar(c)),
            _ => None,
        };
    }
    let shift = k.modifiers.contains(KeyModifiers::SHIFT);
    let cols = if shift { 10 } else { 1 };
    Some(match k.code {
        KeyCode::Char('q') => Msg::Quit,
        KeyCode::Esc => Msg::Back,
        KeyCode::Tab => Msg::NextView,
        KeyCode::BackTab => Msg::PrevView,
        KeyCode::Left | KeyCode::Char('h') => Msg::MoveTime(-cols),
        KeyCode::Right | KeyCode::Char('l') => Msg::MoveTime(cols),
        KeyCode::Char('H') => Msg::MoveTime(-10),
        KeyCode::Char('L') => Msg::MoveTime(10),
        KeyCode::Char('+') => Msg::ZoomIn,
        KeyCode::Char('-') => Msg::ZoomOut,
        KeyCode::Char('=') => Msg::FitWidth,
        KeyCode::Home => Msg::TimeHome,
        KeyCode::End => Msg::TimeEnd,
        KeyCode::Up | KeyCode::Char('k') => Msg::Move(-1),
        KeyCode::Down | KeyCode::Char('j') => Msg::Move(1),
        KeyCode::PageUp if app.view == View::Events && app.detail => Msg::ScrollDetail(-1),
        KeyCode::PageDown if app.view == View::Events && app.detail => Msg::ScrollDetail(1),
        KeyCode::Char('K') if app.view == View::Events && app.detail => Msg::ScrollDetailLines(-1),
        KeyCode::Char('J') if app.view == View::Events && app.detail => Msg::ScrollDetailLines(1),
        KeyCode::PageUp if app.view == View::Diff => Msg::ScrollDiff(-1),
        KeyCode::PageDown if app.view == View::Diff => Msg::ScrollDiff(1),
        KeyCode::PageUp => Msg::Move(-10),
        KeyCode::PageDown => Msg::Move(10),
        KeyCode::Char('?') => Msg::ToggleHelp,
        KeyCode::Char('!') => Msg::GoRoot,
        KeyCode::Char('a') if app.view == View::Timeline => Msg::ToggleAggregate,
        KeyCode::Char('/') => Msg::SearchStart,
        KeyCode::Char('n') => Msg::NextMatch,
        KeyCode::Char('N') => Msg::PrevMatch,
        KeyCode::Enter if app.view == View::Events => Msg::ToggleDetail,
        KeyCode::Char('r') if app.view == View::Events => Msg::ToggleRankFilter,
        KeyCode::Char('f') if app.view == View::Events => Msg::CycleKindFilter,
        _ => return None,
    })
}
