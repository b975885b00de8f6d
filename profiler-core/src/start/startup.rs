//! Start-up: `--list-probes`, reading `PROF_*`, and the guard that writes at the end.

use std::io::Write;

use crate::instrument::clock::{Clock, CpuClock};
use crate::instrument::device::Device;
use crate::register::info::ProbeInfo;
use crate::register::registry::registry;
use crate::schedule::SessionMode;
use crate::select::config::{Config, ConfigError, Mode};
use crate::session::{self, ActiveClock, Session};
use profiler_format::filter::{Filter, Key};

/// Returned by [`init`](crate::init): writes the results (marked incomplete if the schedule has
/// not finished) when dropped, normally when `main` returns. If the results cannot be written
/// (not even at this last try), dropping it ends the process with exit status 1.
#[must_use = "the results are written when this guard is dropped; keep it alive until the end of main"]
#[derive(Debug)]
pub struct InitGuard {
    session: Option<&'static Session>,
    /// `--list-probes=warmup`: list when dropped, if the warmup did not end first.
    listing: bool,
}

impl InitGuard {
    /// A guard that does nothing.
    pub const fn inert() -> InitGuard {
        InitGuard {
            session: None,
            listing: false,
        }
    }
}

impl Drop for InitGuard {
    fn drop(&mut self) {
        if self.listing && !std::thread::panicking() {
            handle_listing(PENDING_LISTING.get().is_some_and(|p| p.json));
        }
        if let Some(session) = self.session {
            // Results that could not be written make the program's exit status say so (not
            // while unwinding: the panic's own status stands).
            if !session.end() && !std::thread::panicking() {
                say!(
                    "profiler-core: exiting with status 1 because the results could not be \
                     written"
                );
                std::process::exit(1);
            }
        }
    }
}

/// Every registered probe, in file and line order, marked with what `filter` selects (with no
/// filter, every probe is selected).
pub fn list(filter: Option<&Filter>) -> Vec<ProbeInfo> {
    registry()
        .iter()
        .map(|e| e.info(filter.is_none_or(|f| e.selected_by(f))))
        .collect()
}

/// What `--list-probes` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ListRequest {
    json: bool,
    /// `--list-probes=warmup[-json]`: run the warmup first, so that the probes registered at
    /// run time (runtime probes, `tracing` spans) are listed too.
    after_warmup: bool,
}

/// The listing asked for on the command line, if any.
fn list_request(
    args: impl Iterator<Item = std::ffi::OsString>,
) -> Option<Result<ListRequest, String>> {
    let request = |json, after_warmup| Some(Ok(ListRequest { json, after_warmup }));
    for arg in args {
        let Some(arg) = arg.to_str() else {
            // Not UTF-8: no listing format, but a `--list-probes=` form all the same, which
            // must not run the program as if it were any other argument.
            if arg.as_encoded_bytes().starts_with(b"--list-probes=") {
                return Some(Err(unknown_format(&arg.to_string_lossy())));
            }
            continue;
        };
        match arg {
            "--list-probes" | "--list-probes=text" => return request(false, false),
            "--list-probes=json" => return request(true, false),
            "--list-probes=warmup" => return request(false, true),
            "--list-probes=warmup-json" => return request(true, true),
            other if other.starts_with("--list-probes=") => {
                return Some(Err(unknown_format(other)));
            }
            _ => {}
        }
    }
    None
}

/// The error for a `--list-probes=` form that names no format.
fn unknown_format(arg: &str) -> String {
    format!(
        "error: unknown listing format in `{arg}`\n  = help: use --list-probes (text), \
         --list-probes=json, or --list-probes=warmup / warmup-json (after the warmup \
         iterations, with the probes registered at run time)"
    )
}

/// `--list-probes=warmup`: the listing printed once the program has run `warmup` iterations
/// (or ends, if sooner), with nothing measured.
#[derive(Debug)]
struct PendingListing {
    json: bool,
    warmup: u32,
    steps: std::sync::atomic::AtomicU32,
}

static PENDING_LISTING: std::sync::OnceLock<PendingListing> = std::sync::OnceLock::new();

/// Whether `--list-probes=warmup` is waiting for the warmup to end (then every `tracing`
/// span is taken in, to be listed).
#[cfg(feature = "tracing")]
pub(crate) fn listing_pending() -> bool {
    PENDING_LISTING.get().is_some()
}

/// Called by `step()` when no session runs: prints the pending listing once the warmup is over.
pub(crate) fn listing_step() {
    if let Some(pending) = PENDING_LISTING.get() {
        let done = pending
            .steps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        if done >= pending.warmup {
            handle_listing(pending.json);
        }
    }
}

/// Renders the text listing: one aligned line per probe, `key=value` cells so that each value
/// can be copied into `PROF_FILTER`.
pub fn render_list(probes: &[ProbeInfo], filter: Option<&Filter>) -> String {
    let rows: Vec<[String; 5]> = probes
        .iter()
        .map(|p| {
            [
                p.id.clone(),
                format!("kind={}", p.kind),
                format!("layer={}", p.layer.unwrap_or("-")),
                format!("phase={}", p.phase.unwrap_or("-")),
                format!("name={}", p.name),
            ]
        })
        .collect();
    let mut widths = [0usize; 5];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for (p, row) in probes.iter().zip(&rows) {
        let mark = match (filter.is_some(), p.selected) {
            (false, _) => "",
            (true, true) => "* ",
            (true, false) => "  ",
        };
        out.push_str(mark);
        for (cell, w) in row.iter().zip(widths) {
            out.push_str(&format!("{cell:<w$}  "));
        }
        out.push_str(&format!("{}:{}\n", p.file, p.line));
    }
    match filter {
        Some(f) => {
            let n = probes.iter().filter(|p| p.selected).count();
            out.push_str(&format!(
                "{} probes, {n} selected by PROF_FILTER={} (marked *)\n",
                probes.len(),
                crate::select::config::shorten(f.source(), 200)
            ));
        }
        None => out.push_str(&format!(
            "{} probes; each id and name above works as a PROF_FILTER value (id=..., name=...)\n",
            probes.len()
        )),
    }
    #[cfg(feature = "tracing")]
    out.push_str(
        "(tracing spans are known only once they run: --list-probes=warmup lists them after the \
         warmup iterations)\n",
    );
    out
}

fn fail(message: impl std::fmt::Display) -> ! {
    say!("{message}");
    std::process::exit(2);
}

/// `--list-probes`: print and exit 0 (exit 2 on a filter that does not parse).
fn handle_listing(json: bool) -> ! {
    let filter = crate::select::config::vars::listing_filter().unwrap_or_else(|e| fail(e));
    // An unset or empty filter marks nothing as left out.
    let filter = Some(filter).filter(|f| !f.selects_all());
    let probes = list(filter.as_ref());
    let text = if json {
        let mut s = serde_json::to_string_pretty(&probes).unwrap_or_else(|e| fail(e));
        s.push('\n');
        s
    } else {
        render_list(&probes, filter.as_ref())
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    std::process::exit(0);
}

/// `--list-probes=warmup`: the program runs, measuring nothing, and the listing is printed
/// after `PROF_WARMUP` iterations (or when `main` returns).
fn start_listing(json: bool) -> InitGuard {
    let config = Config::from_env().unwrap_or_else(|e| fail(e));
    let _ = PENDING_LISTING.set(PendingListing {
        json,
        warmup: config.warmup.max(1),
        steps: std::sync::atomic::AtomicU32::new(0),
    });
    InitGuard {
        session: None,
        listing: true,
    }
}

/// Starts a session with `config` and `clock` (for tests and programs that configure the
/// profiler in code). Checks what [`init`](crate::init) checks but returns the error.
pub fn start(
    config: Config,
    clock: Option<Box<dyn Clock>>,
    device: Option<Box<dyn Device>>,
) -> Result<InitGuard, ConfigError> {
    config.validate()?;
    // The mode, decided once: `off` runs no session at all.
    let Some(mode) = SessionMode::of(config.mode) else {
        return Ok(InitGuard::inert());
    };
    config.check_output()?;
    config.check_on_demand()?;
    let clock = match clock {
        Some(clock) => ActiveClock::Custom(clock),
        None => ActiveClock::Cpu(CpuClock::new()),
    };
    let session = Session::new(config, mode, clock, device);
    // Probes registered at run time (`RuntimeProbe`, `tracing` spans) come later: a filter that
    // asks for them by kind is not judged on the annotations alone.
    let waits_for_runtime = {
        let filter = &session.config().filter;
        filter.asks_for(Key::Kind, "runtime") || filter.asks_for(Key::Kind, "span")
    };
    if registry().is_empty() {
        say!(
            "profiler-core: warning: no probe is registered yet: annotate functions with \
             #[profiled], add probe!() points, or register probes at run time (RuntimeProbe, \
             the tracing bridge), which are picked up as they come"
        );
    } else if session.selected_count() == 0 && !waits_for_runtime {
        let filter = session.config().filter.source().to_owned();
        let total = registry().len();
        return Err(ConfigError::new(
            "PROF_FILTER",
            format!(
                "error: PROF_FILTER={} selects none of the {total} probes\n  = help: run \
                 the program with --list-probes (and the same PROF_FILTER) to see every probe \
                 and what the filter selects; to select probes registered at run time \
                 (RuntimeProbe, tracing spans) by name, add kind=runtime or kind=span",
                crate::select::config::shorten(&filter, 200)
            ),
        ));
    }
    if let Some(delay) = &session.measuring.schedule.delay {
        let asks_runtime =
            delay.filter.asks_for(Key::Kind, "runtime") || delay.filter.asks_for(Key::Kind, "span");
        if delay.entries().next().is_none() && !asks_runtime {
            return Err(ConfigError::new(
                "PROF_DELAY_FILTER",
                format!(
                    "error: PROF_DELAY_FILTER={} selects none of the {} probes, so nothing \
                     would be delayed\n  = help: run the program with --list-probes (and \
                     PROF_FILTER set to the same filter) to see every probe and what the filter \
                     selects",
                    crate::select::config::shorten(delay.filter.source(), 200),
                    registry().len()
                ),
            ));
        }
    }
    let mut session = session;
    session.serve_metrics()?;
    let session = session::install(session);
    if let Some(hz) = session.config().cpu_sample {
        use crate::instrument::clock::ActiveClock;
        use crate::sample::Times;
        let times = match mode {
            SessionMode::Trace => Times::Timeline,
            SessionMode::Continuous => Times::Windows,
            _ => Times::Off,
        };
        let clock = match &session.measuring.clock {
            ActiveClock::Cpu(clock) => Some(clock),
            ActiveClock::Custom(_) => None,
        };
        crate::sample::start(hz, times, clock, session.config().cpu_sample_clock);
    }
    if crate::sample::open::wanted() {
        crate::sample::open::start_publishing();
    }
    // Spans registered before the session knew the filter are judged again.
    #[cfg(feature = "tracing")]
    tracing_core::callsite::rebuild_interest_cache();
    #[cfg(unix)]
    crate::start::signals::install();
    #[cfg(target_os = "linux")]
    if mode == SessionMode::Continuous {
        crate::start::signals::install_trigger();
    }
    Ok(InitGuard {
        session: Some(session),
        listing: false,
    })
}

/// What `#[profiler_core::main]` runs first: see [`init`](crate::init).
pub fn init() -> InitGuard {
    if let Some(request) = list_request(std::env::args_os().skip(1)) {
        match request {
            Ok(ListRequest {
                json,
                after_warmup: false,
            }) => handle_listing(json),
            Ok(ListRequest { json, .. }) => return start_listing(json),
            Err(message) => fail(message),
        }
    }
    if session::current().is_some() {
        say!("profiler-core: warning: init() called twice; the second call does nothing");
        return InitGuard::inert();
    }
    let config = Config::from_env().unwrap_or_else(|e| fail(e));
    for (var, near) in crate::select::config::unknown_vars() {
        match near {
            Some(near) => say!(
                "profiler-core: warning: {var} is not a variable this build knows; did you mean \
                 {near}? (it is ignored)"
            ),
            None => say!(
                "profiler-core: warning: {var} is not a variable this build knows (known: {})",
                crate::select::config::vars::VARIABLES
                    .iter()
                    .map(|v| v.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    if config.mode != Mode::Off && !config.out.contains("%r") {
        if let Err(why) = crate::output::rank_checked() {
            say!("profiler-core: warning: {why}; the run is recorded as rank 0");
        }
        if let Some(warning) = shared_output(&config.out) {
            say!("{warning}");
        }
    }
    let device = if config.mode == Mode::Off {
        None
    } else {
        crate::instrument::device::open(&config)
    };
    start(config, None, device).unwrap_or_else(|e| fail(e))
}

/// The warning for a multi-rank job whose ranks would all write the same file (a rank variable
/// is set, and `PROF_OUT` has neither `%r` nor `%p`): each replaces the one before, silently.
fn shared_output(out: &str) -> Option<String> {
    if out.contains("%r") || out.contains("%p") {
        return None;
    }
    let (var, value) = crate::output::RANK_VARS
        .iter()
        .find_map(|&var| Some((var, std::env::var_os(var)?)))?;
    Some(format!(
        "profiler-core: warning: {var}={} is set (a multi-rank job), but PROF_OUT={} has no %r: \
         every rank writes that same file and the last to finish replaces the others; set \
         PROF_OUT=prof-rank%r.json (or any name with %r)",
        crate::select::config::shorten(&value.to_string_lossy(), 20),
        crate::select::config::shorten(out, 200)
    ))
}

/// Publishes the open events from now on, in this session and the next ones, with or without
/// CPU sampling (cold path): then [`open_event`](crate::open_event) and
/// [`open_layer`](crate::open_layer) answer, for a framework integration that attributes its
/// own work to the annotated layer that runs it (burn's backend decorator, `profiler-burn`). The price: while they are published, every run of an
/// annotated function or probe leaves the fast path to push and pop its event (a few
/// thread-local stores; `docs/overhead.md`), the unarmed ones included.
pub fn publish_open_events() {
    crate::sample::open::want();
    if crate::session::current().is_some() {
        crate::sample::open::start_publishing();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> impl Iterator<Item = std::ffi::OsString> {
        list.iter()
            .map(std::ffi::OsString::from)
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn list_flag_anywhere() {
        let req = |json, after_warmup| Some(Ok(ListRequest { json, after_warmup }));
        assert_eq!(list_request(args(&["--iters", "3"])), None);
        assert_eq!(
            list_request(args(&["x", "--list-probes"])),
            req(false, false)
        );
        assert_eq!(
            list_request(args(&["--list-probes=json", "y"])),
            req(true, false)
        );
        assert_eq!(
            list_request(args(&["--list-probes=warmup"])),
            req(false, true)
        );
        assert_eq!(
            list_request(args(&["--list-probes=warmup-json"])),
            req(true, true)
        );
        assert!(matches!(
            list_request(args(&["--list-probes=xml"])),
            Some(Err(_))
        ));
    }

    /// A `--list-probes=` form that is not UTF-8 is an unknown format too (it ran the program).
    #[cfg(unix)]
    #[test]
    fn list_flag_with_bytes_that_are_not_utf8_is_an_error() {
        use std::os::unix::ffi::OsStringExt;
        for bytes in [&b"--list-probes=\xff"[..], b"--list-probes=json\xff"] {
            let arg = std::ffi::OsString::from_vec(bytes.to_vec());
            let got = list_request(vec![arg].into_iter());
            let Some(Err(e)) = got else {
                panic!("{bytes:?}: {got:?}")
            };
            assert!(
                e.contains("unknown listing format in `--list-probes="),
                "{e}"
            );
        }
        // Other arguments that are not UTF-8 are the program's own.
        let other = std::ffi::OsString::from_vec(b"--iters=\xff".to_vec());
        assert_eq!(list_request(vec![other].into_iter()), None);
    }
}
