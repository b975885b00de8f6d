//! The terminal loop of `prof watch`: raw mode and the alternate screen (restored on every way
//! out: quit, error, panic), a reader thread that polls the files every `--interval` and sends
//! what changed, and the loop that draws, waits for a key at most [`TICK`], and applies what
//! the reader sent. Works over ssh: crossterm speaks to the terminal through the standard
//! output, nothing else.

use std::io;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{cursor, execute};

use super::model::{Action, KeyPress, Update, Watch};
use super::source::Source;
use super::view;

/// The longest the loop waits for a key before it applies what was read and redraws (the
/// file's age moves every second).
pub const TICK: Duration = Duration::from_millis(200);

/// Restores the terminal when dropped: on quit, on an error, and while a panic unwinds
/// (ratatui's panic hook restores it too, before the message is printed).
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = ratatui::try_restore();
        let _ = execute!(io::stdout(), cursor::Show);
    }
}

/// Runs the view of `watch` over `paths` (in its order) until a key quits; drift is judged
/// against `drift_threshold`.
pub fn run(watch: &mut Watch, paths: Vec<PathBuf>, drift_threshold: f64) -> io::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let _restore = Restore;
    let (updates, received) = mpsc::channel::<(usize, Update)>();
    let (stop, stopped) = mpsc::channel::<()>();
    let interval = watch.interval;
    let reader = std::thread::Builder::new()
        .name("prof-watch-reader".to_owned())
        .spawn(move || {
            let mut sources: Vec<Source> = paths.into_iter().map(Source::new).collect();
            loop {
                for (i, source) in sources.iter_mut().enumerate() {
                    if let Some(update) = source.poll(drift_threshold) {
                        if updates.send((i, update)).is_err() {
                            return;
                        }
                    }
                }
                match stopped.recv_timeout(interval) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
            }
        })?;
    let result = (|| -> io::Result<()> {
        loop {
            while let Ok((i, update)) = received.try_recv() {
                watch.apply(i, update);
            }
            terminal.draw(|frame| view::draw(frame, watch, SystemTime::now()))?;
            if event::poll(TICK)? {
                if let Event::Key(k) = event::read()? {
                    if let Some(key) = key(k) {
                        if watch.handle_key(key) == Action::Quit {
                            return Ok(());
                        }
                    }
                }
            }
        }
    })();
    drop(stop);
    // The reader stops at its next wait; a read under way is not waited for.
    drop(reader);
    result
}

/// The model's key for a terminal key press (releases and repeats of other platforms left out).
fn key(k: KeyEvent) -> Option<KeyPress> {
    if k.kind != KeyEventKind::Press {
        return None;
    }
    Some(match k.code {
        KeyCode::Char(c) if k.modifiers.contains(KeyModifiers::CONTROL) => KeyPress::Ctrl(c),
        KeyCode::Char(c) => KeyPress::Char(c),
        KeyCode::Enter => KeyPress::Enter,
        KeyCode::Esc => KeyPress::Esc,
        KeyCode::Backspace => KeyPress::Backspace,
        KeyCode::Tab => KeyPress::Tab,
        KeyCode::BackTab => KeyPress::BackTab,
        KeyCode::Up => KeyPress::Up,
        KeyCode::Down => KeyPress::Down,
        KeyCode::PageUp => KeyPress::PageUp,
        KeyCode::PageDown => KeyPress::PageDown,
        KeyCode::Home => KeyPress::Home,
        KeyCode::End => KeyPress::End,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_keys_become_the_models() {
        let press = |code, modifiers| KeyEvent::new(code, modifiers);
        assert_eq!(
            key(press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(KeyPress::Ctrl('c'))
        );
        assert_eq!(
            key(press(KeyCode::Char('q'), KeyModifiers::NONE)),
            Some(KeyPress::Char('q'))
        );
        assert_eq!(
            key(press(KeyCode::BackTab, KeyModifiers::SHIFT)),
            Some(KeyPress::BackTab)
        );
        let mut release = press(KeyCode::Char('q'), KeyModifiers::NONE);
        release.kind = KeyEventKind::Release;
        assert_eq!(key(release), None);
        assert_eq!(key(press(KeyCode::F(1), KeyModifiers::NONE)), None);
    }
}
