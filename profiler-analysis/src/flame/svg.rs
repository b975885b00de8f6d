//! The SVG: inferno's flame graph of the folded stacks, each frame's title saying its event's
//! self and total time (and in a differential graph the verdict, the change and its interval),
//! the colours of a differential graph set per frame from `prof diff`'s verdicts through
//! inferno's `PaletteMap`.

use std::fmt::Write;

use inferno::flamegraph::color::{Color, PaletteMap};
use inferno::flamegraph::{self, Direction, FuncFrameAttrsMap, Options};

use super::{Flame, Frame, FrameKey};
use crate::diff::Verdict;
use crate::text::human_ns;
use profiler_tables::table_text::printable;

/// A colour, `(red, green, blue)`.
pub type Rgb = (u8, u8, u8);

/// The colour of `other` and of group frames: not an event.
const NEUTRAL: Rgb = (225, 225, 225);
/// An event the baseline does not have.
const NEW: Rgb = (205, 185, 235);

/// The colour of an event's frame in a differential graph: red regressed, blue improved, grey
/// no change and within noise, pale inconclusive; `None` (not in the baseline) lilac.
pub fn verdict_color(verdict: Option<Verdict>) -> Rgb {
    match verdict {
        Some(Verdict::Regressed) => (224, 72, 60),
        Some(Verdict::Improved) => (66, 121, 216),
        Some(Verdict::NoChange) => (190, 190, 190),
        Some(Verdict::WithinNoise) => (205, 205, 205),
        Some(Verdict::Inconclusive) => (242, 238, 222),
        None => NEW,
    }
}

fn color((r, g, b): Rgb) -> Color {
    Color { r, g, b }
}

/// `x` of the mean iteration, as a percentage.
fn share(x: f64, iteration: f64) -> String {
    if iteration > 0.0 {
        format!("{:.1}%", 100.0 * x / iteration)
    } else {
        "-".to_owned()
    }
}

/// A ratio as `×1.083`.
pub(super) fn times(r: f64) -> String {
    if r.is_finite() {
        format!("×{r:.3}")
    } else {
        "–".to_owned()
    }
}

/// What the title (tooltip) of `frame` says: `NAME (details)`. inferno's script labels a frame
/// with its title less a last parenthesized group, so the details are that group and hold no
/// parenthesis of their own.
pub(super) fn frame_title(flame: &Flame, frame: &Frame) -> String {
    let it = flame.iteration_ns;
    let mut d: Vec<String> = Vec::new();
    match &frame.key {
        FrameKey::Other => {
            d.push(format!(
                "{} per iteration, {} of it: the time no top-level event covers",
                human_ns(frame.width_ns),
                share(frame.width_ns, it)
            ));
        }
        FrameKey::Group(_) => {
            d.push(format!(
                "{} per iteration, {} of it",
                human_ns(frame.width_ns),
                share(frame.width_ns, it)
            ));
        }
        FrameKey::Event(id, _) => {
            d.push(format!(
                "self {}, total {} per iteration, {} of it",
                human_ns(frame.self_ns),
                human_ns(frame.total_ns),
                share(frame.total_ns, it)
            ));
            if (frame.calls_per_iter - 1.0).abs() > 1e-9 {
                d.push(format!("{:.2} calls per iteration", frame.calls_per_iter));
            }
            if frame.merged {
                d.push("merged: every later run of its probe".to_owned());
            }
            if frame.concurrent {
                d.push("on another thread".to_owned());
            }
            if !frame.matched {
                d.push(format!(
                    "context: the filter does not match it, drawn {}: the matching events in it",
                    human_ns(frame.width_ns)
                ));
            } else if frame.missing_from > 0 {
                d.push(format!(
                    "drawn {}: its mean over every run drawn, {} of which {}",
                    human_ns(frame.width_ns),
                    frame.missing_from,
                    if frame.missing_from == 1 {
                        "lacks it"
                    } else {
                        "lack it"
                    }
                ));
            } else if frame.total_ns - frame.width_ns > 1.0 {
                d.push(format!(
                    "drawn {}: what its parent holds of it, whose children add up to more than \
                     the parent: runs side by side on other threads, or measured in other \
                     iterations",
                    human_ns(frame.width_ns)
                ));
            }
            if flame.subtitle.is_some() {
                d.push(match &frame.diff {
                    Some(c) => format!(
                        "{}: median {} → {}, {}, 95% CI {} – {}",
                        c.verdict.as_str(),
                        human_ns(c.before_median_ns),
                        human_ns(c.after_median_ns),
                        times(c.ratio),
                        times(c.ci_low),
                        times(c.ci_high)
                    ),
                    None => "not in the baseline".to_owned(),
                });
            }
            d.push(format!("id {id}"));
        }
    }
    let details = d.join("; ").replace('(', "[").replace(')', "]");
    // The attribute file inferno reads is one line per frame, fields split at tabs: the
    // escapes of `xml_text` hold none.
    xml_text(&format!("{} ({details})", frame.name))
}

/// Text for the SVG, from a profile's strings (the program, the ids): what XML 1.0 forbids
/// (NUL, ESC, BEL and the other control characters, U+FFFE, U+FFFF) and what would break the
/// lines of inferno's attribute file (tabs, line breaks) written as visible escapes
/// ([`printable`]); inferno escapes the markup (`<`, `&`, quotes) itself.
pub(crate) fn xml_text(text: &str) -> String {
    printable(text).into_owned()
}

/// The SVG of `flame`.
pub(super) fn render(flame: &Flame) -> std::io::Result<String> {
    let mut palette = PaletteMap::default();
    let mut attrs = String::new();
    for frame in &flame.frames {
        let fixed = match &frame.key {
            FrameKey::Other | FrameKey::Group(_) => Some(NEUTRAL),
            FrameKey::Event(..) if flame.subtitle.is_some() => {
                Some(verdict_color(frame.diff.as_ref().map(|d| d.verdict)))
            }
            FrameKey::Event(..) => None,
        };
        if let Some(rgb) = fixed {
            palette.insert(&frame.name, color(rgb));
        }
        let _ = writeln!(attrs, "{}\ttitle={}", frame.name, frame_title(flame, frame));
    }
    let mut options = Options::default();
    options.title = xml_text(&flame.title);
    options.subtitle = flame.subtitle.as_deref().map(xml_text);
    options.count_name = "ns".to_owned();
    options.name_type = "Frame:".to_owned();
    // Colours from the names' hashes: the same frame gets the same colour in every graph.
    options.hash = true;
    options.palette_map = Some(&mut palette);
    options.func_frameattrs = FuncFrameAttrsMap::from_reader(attrs.as_bytes())?;
    options.direction = if flame.icicle {
        Direction::Inverted
    } else {
        Direction::Straight
    };
    let folded = flame.folded();
    let mut out = Vec::new();
    flamegraph::from_lines(&mut options, folded.lines(), &mut out)?;
    String::from_utf8(out).map_err(std::io::Error::other)
}
