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
fn times(r: f64) -> String {
    if r.is_finite() {
        format!("×{r:.3}")
    } else {
        "–".to_owned()
    }
}

/// What the title (tooltip) of `frame` says.
pub(super) fn frame_title(flame: &Flame, frame: &Frame) -> String {
    let it = flame.iteration_ns;
    let mut t = String::new();
    match &frame.key {
        FrameKey::Other => {
            let _ = write!(
                t,
                "other: {} per iteration ({}), the time no top-level event covers",
                human_ns(frame.width_ns),
                share(frame.width_ns, it)
            );
        }
        FrameKey::Group(_) => {
            let _ = write!(
                t,
                "{}: {} per iteration ({})",
                frame.name,
                human_ns(frame.width_ns),
                share(frame.width_ns, it)
            );
        }
        FrameKey::Event(id, _) => {
            let _ = write!(
                t,
                "{}: self {}, total {} per iteration ({})",
                frame.name,
                human_ns(frame.self_ns),
                human_ns(frame.total_ns),
                share(frame.total_ns, it)
            );
            if (frame.calls_per_iter - 1.0).abs() > 1e-9 {
                let _ = write!(t, ", {:.2} calls per iteration", frame.calls_per_iter);
            }
            if frame.merged {
                t.push_str(", merged (every later run of its probe)");
            }
            if frame.concurrent {
                t.push_str(", on another thread");
            }
            if !frame.matched {
                let _ = write!(
                    t,
                    "; context: the filter does not match it, drawn {} (the matching events in it)",
                    human_ns(frame.width_ns)
                );
            } else if frame.total_ns - frame.width_ns > 1.0 {
                let _ = write!(
                    t,
                    "; drawn {}: what the iteration holds of it (it ran beside other events)",
                    human_ns(frame.width_ns)
                );
            }
            if flame.subtitle.is_some() {
                match &frame.diff {
                    Some(d) => {
                        let _ = write!(
                            t,
                            "; {}: median {} → {} ({}, 95% CI {} – {})",
                            d.verdict.as_str(),
                            human_ns(d.before_median_ns),
                            human_ns(d.after_median_ns),
                            times(d.ratio),
                            times(d.ci_low),
                            times(d.ci_high)
                        );
                    }
                    None => t.push_str("; not in the baseline"),
                }
            }
            let _ = write!(t, " [{id}]");
        }
    }
    // The attribute file inferno reads is one line per frame, fields split at tabs.
    t.replace(['\t', '\n', '\r'], " ")
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
    options.title = flame.title.clone();
    options.subtitle = flame.subtitle.clone();
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
