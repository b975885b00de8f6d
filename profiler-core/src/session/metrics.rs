//! `PROF_METRICS`: `continuous` mode's closed windows served to Prometheus.
//!
//! At start-up (before the program's body runs) the address is bound, `PORT` plus the rank
//! (port 0: any free port, printed), and one thread of its own answers `GET /metrics`. Each
//! time a profile of the windows is made to be written (the writer thread's rewrites, at most
//! once a second, and the run's last write), the same profile is rendered into OpenMetrics
//! text here, on the thread that made it, never the training thread's window close, and
//! published: the text is swapped into a `Mutex<Arc<String>>` whose lock the server holds only
//! to clone the `Arc`. So the values served are those of the file written at the same moment,
//! window for window, and nothing the server does (a scraper that never reads, a thousand of
//! them) can hold up the training thread or the writer.
//!
//! The endpoint is the process's, not a session's: after the run's end it goes on serving the
//! last window published until the process exits, and a later session of the same process (a
//! sweep that starts one per configuration) that asks for the same `PROF_METRICS` takes it
//! over (it serves `# EOF` until that session publishes), so that its port is not found taken
//! by the profiler itself. A later session that asks for another address closes the old
//! endpoint first.
//!
//! The series are those of the last closed window (see `docs/guide.md`, "Prometheus and
//! Grafana"), rendered with the Prometheus project's `prometheus-client` (the `metrics`
//! feature), which also escapes the label values. Without the feature, `PROF_METRICS` is an
//! error at start-up naming it.

use crate::select::config::{Config, ConfigError};
use profiler_format::Profile;

#[cfg(feature = "metrics")]
pub(crate) use served::Metrics;

/// Without the `metrics` feature there is no endpoint: `PROF_METRICS` is refused at start-up.
#[cfg(not(feature = "metrics"))]
#[derive(Debug)]
pub(crate) struct Metrics;

#[cfg(not(feature = "metrics"))]
impl Metrics {
    /// `PROF_METRICS` set in a build without the `metrics` feature: an error naming it.
    pub(crate) fn start(config: &Config) -> Result<Option<Metrics>, ConfigError> {
        match &config.metrics {
            None => Ok(None),
            Some(addr) => Err(ConfigError::new(
                "PROF_METRICS",
                format!(
                    "error: PROF_METRICS={} asks for a Prometheus endpoint, and this build of \
                     profiler-core lacks its `metrics` feature.\n  = help: build with the \
                     feature (`profiler-core = {{ features = [\"metrics\"] }}`, or `cargo build \
                     --features profiler-core/metrics`), or unset PROF_METRICS",
                    crate::select::config::shorten(addr, 80)
                ),
            )),
        }
    }

    /// Nothing to publish to.
    pub(crate) fn publish(
        &self,
        _profile: &Profile,
        _calls: &std::collections::HashMap<u32, u64>,
        _last: bool,
    ) {
    }
}

#[cfg(feature = "metrics")]
mod served {
    use std::collections::HashMap;
    use std::io::{Read, Write};
    use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use super::{Config, ConfigError, Profile};
    use crate::sync::lock;
    use profiler_analysis::diff::DiffOptions;
    use profiler_analysis::drift::{self, DriftStatus, Series};
    use profiler_format::Stats;
    use prometheus_client::encoding::text::encode;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::registry::{Registry, Unit};

    /// The most bytes of a request read: a scrape's request line and headers are a few hundred.
    pub(crate) const MAX_REQUEST: usize = 8 * 1024;
    /// How long a connection may take to send its whole request (a deadline, not a wait per
    /// read: a client that trickles a byte at a time is cut off too), and each write of the
    /// response.
    const IO_TIMEOUT: Duration = Duration::from_secs(5);
    /// The most connections answered at once; more are closed at once.
    pub(crate) const MAX_OPEN: usize = 16;
    /// The content type of the OpenMetrics text format.
    const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    /// The least time between two judgements of the drift (`prof report`'s, over every window
    /// kept: tens of milliseconds with a hundred windows); the series between them show the
    /// last judgement. Also at least [`JUDGEMENT_SHARE`] times what the last one took.
    const JUDGEMENT_INTERVAL: Duration = Duration::from_secs(10);
    /// A judgement of the drift is followed by at least this many times its own duration
    /// before the next (so it takes at most 2% of the writer's time).
    const JUDGEMENT_SHARE: u32 = 50;

    /// The endpoint: what it serves, and what the series need between two renders.
    #[derive(Debug)]
    pub(crate) struct Metrics {
        /// What the server thread serves.
        shared: Arc<Shared>,
        /// The `job` label.
        job: String,
        /// The drift as last judged, and when to judge it again.
        totals: Mutex<Totals>,
        /// Which of the sessions that served on the endpoint this one is: it publishes only
        /// while it is the last ([`Shared::owner`]).
        generation: u64,
    }

    /// The process's endpoint, once a session bound one: it outlives the session.
    static ENDPOINT: Mutex<Option<Endpoint>> = Mutex::new(None);

    /// The descriptor the process's endpoint listens on (-1: none), for [`close_in_child`].
    #[cfg(unix)]
    static LISTENING: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

    /// The child's side of a `fork`: a forked worker would hold the endpoint's port for as long
    /// as it lives (no thread of its own serves it there, and the parent's end cannot free
    /// it); its copy of the descriptor is closed. Only an atomic swap and close(2):
    /// async-signal-safe, as a fork handler must be.
    #[cfg(unix)]
    extern "C" fn close_in_child() {
        let fd = LISTENING.swap(-1, Relaxed);
        if fd >= 0 {
            // SAFETY: `fd` is the listening socket's descriptor, open until the endpoint is
            // closed, which sets LISTENING to -1 first; in the child it is a copy no one else
            // uses.
            unsafe { libc::close(fd) };
        }
    }

    /// An endpoint being served, and what it was bound for.
    #[derive(Debug)]
    struct Endpoint {
        /// `PROF_METRICS` and the rank it was bound for: a session asking the same takes it
        /// over.
        asked: (String, u32),
        /// The address it listens on.
        local: SocketAddr,
        /// What its server thread serves.
        shared: Arc<Shared>,
    }

    impl Endpoint {
        /// Stops the server thread and waits (up to a second) for its listener to be closed,
        /// so that the port can be bound again.
        fn close(self) {
            // Before the listener closes, so that a fork meanwhile never closes a reused number.
            #[cfg(unix)]
            LISTENING.store(-1, Relaxed);
            self.shared.stopped.store(true, Relaxed);
            // The server thread waits in `accept`: a connection of our own wakes it up.
            let mut wake = self.local;
            if wake.ip().is_unspecified() {
                wake.set_ip(match wake {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
            let until = Instant::now() + Duration::from_secs(1);
            while !self.shared.closed.load(Relaxed) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    /// Between the renders and the server thread.
    #[derive(Debug)]
    pub(crate) struct Shared {
        /// The text served: its lock is held only to swap or clone the `Arc`.
        text: Mutex<Arc<String>>,
        /// Connections being answered.
        open: AtomicUsize,
        /// The generation of the session that publishes (changed under `text`'s lock).
        owner: AtomicU64,
        /// Set to stop the server thread.
        stopped: AtomicBool,
        /// Set by the server thread once its listener is closed.
        closed: AtomicBool,
    }

    impl Shared {
        /// A new session takes the endpoint over: it serves nothing until that session
        /// publishes, and the sessions before publish no more. Returns the new owner.
        fn take_over(&self) -> u64 {
            let mut text = lock(&self.text);
            *text = Arc::new("# EOF\n".to_owned());
            self.owner.fetch_add(1, Relaxed) + 1
        }
    }

    /// What the drift series carry from one publication to the next.
    #[derive(Debug, Default)]
    pub(crate) struct Totals {
        /// Per event (`order`): the windows closed in a row while its drift against the run's
        /// start said slower at each judgement.
        slower: HashMap<u32, u64>,
        /// The drift as last judged, per event (`order`).
        judged: HashMap<u32, Judged>,
        /// The iteration's drift as last judged.
        iteration_judged: Option<Judged>,
        /// The `index` of the last window when the drift was last judged.
        judged_index: Option<u64>,
        /// When the drift is to be judged again.
        next_judgement: Option<Instant>,
    }

    /// One series' drift as judged: its verdicts (headline, against the start, in the recent
    /// past) and its change.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Judged {
        verdicts: [DriftStatus; 3],
        change: Option<f64>,
    }

    impl Judged {
        fn of(s: &Series) -> Judged {
            Judged {
                verdicts: [s.drift, s.since_start.drift, s.recent_past.drift],
                change: s.change,
            }
        }

        fn slower_since_start(&self) -> bool {
            self.verdicts[1] == DriftStatus::Slower
        }
    }

    impl Metrics {
        /// Binds `PROF_METRICS` (its port plus the rank, unless 0) and starts the server
        /// thread; `None` without the variable, or when the bind failed and
        /// `PROF_METRICS_OPTIONAL=1` makes that a warning.
        pub(crate) fn start(config: &Config) -> Result<Option<Metrics>, ConfigError> {
            let Some(addr) = &config.metrics else {
                return Ok(None);
            };
            let rank = crate::output::rank();
            let job = config.job.clone().unwrap_or_else(program);
            let asked = (addr.clone(), rank);
            let mut endpoint = lock(&ENDPOINT);
            if let Some(served) = endpoint.as_ref().filter(|e| e.asked == asked) {
                let generation = served.shared.take_over();
                say!(
                    "profiler-core: metrics on http://{}/metrics (the endpoint of the session \
                     before, taken over)",
                    served.local
                );
                return Ok(Some(Metrics::of(
                    Arc::clone(&served.shared),
                    job,
                    generation,
                )));
            }
            // Another address: the old endpoint closes, so that its port is free again.
            if let Some(old) = endpoint.take() {
                old.close();
            }
            let listener = match bind(addr, rank) {
                Ok(listener) => listener,
                Err(why) if config.metrics_optional => {
                    say!(
                        "profiler-core: warning: {why}; training goes on without the \
                         Prometheus endpoint (PROF_METRICS_OPTIONAL=1)"
                    );
                    return Ok(None);
                }
                Err(why) => {
                    return Err(ConfigError::new(
                        "PROF_METRICS",
                        format!(
                            "error: {why}\n  = help: pick a free port (0: any, printed at \
                             start-up), or set PROF_METRICS_OPTIONAL=1 to train on without \
                             the endpoint"
                        ),
                    ))
                }
            };
            let Ok(local) = listener.local_addr() else {
                return Err(ConfigError::new(
                    "PROF_METRICS",
                    format!("error: PROF_METRICS={addr}: the address bound cannot be read"),
                ));
            };
            #[cfg(unix)]
            let fd = {
                use std::os::unix::io::AsRawFd;
                listener.as_raw_fd()
            };
            let metrics = Metrics::serving(listener, job);
            if let Some(metrics) = &metrics {
                #[cfg(unix)]
                {
                    static AT_FORK: std::sync::Once = std::sync::Once::new();
                    // SAFETY: pthread_atfork(3) with a child handler that only swaps an atomic
                    // and closes a descriptor (async-signal-safe).
                    AT_FORK.call_once(|| unsafe {
                        libc::pthread_atfork(None, None, Some(close_in_child));
                    });
                    LISTENING.store(fd, Relaxed);
                }
                say!("profiler-core: metrics on http://{local}/metrics");
                *endpoint = Some(Endpoint {
                    asked,
                    local,
                    shared: Arc::clone(&metrics.shared),
                });
            }
            Ok(metrics)
        }

        /// The descriptor the process's endpoint listens on (-1: none).
        #[cfg(all(test, unix))]
        pub(crate) fn listening() -> i32 {
            LISTENING.load(Relaxed)
        }

        /// Where the process's endpoint listens, if one is served.
        #[cfg(test)]
        pub(crate) fn served_at() -> Option<SocketAddr> {
            lock(&ENDPOINT).as_ref().map(|e| e.local)
        }

        /// A session's handle on the endpoint that `shared` serves.
        fn of(shared: Arc<Shared>, job: String, generation: u64) -> Metrics {
            Metrics {
                shared,
                job,
                totals: Mutex::new(Totals::default()),
                generation,
            }
        }

        /// Serves `listener` from a thread of its own; `None` (with a warning) if none starts.
        pub(crate) fn serving(listener: TcpListener, job: String) -> Option<Metrics> {
            let shared = Arc::new(Shared {
                text: Mutex::new(Arc::new("# EOF\n".to_owned())),
                open: AtomicUsize::new(0),
                owner: AtomicU64::new(0),
                stopped: AtomicBool::new(false),
                closed: AtomicBool::new(false),
            });
            let server = Arc::clone(&shared);
            let started = crate::sync::spawn("profiler-metrics", move || serve(listener, &server));
            if let Err(why) = started {
                say!(
                    "profiler-core: warning: cannot start the thread that serves PROF_METRICS \
                     ({why}); training goes on without the endpoint"
                );
                return None;
            }
            Some(Metrics::of(shared, job, 0))
        }

        /// The windows of `profile` (the one just made to be written) become the text served;
        /// `calls`: the samples measured per event (`order`) in every window closed so far;
        /// `last`: the run's final write, whose drift is judged however recently it was (it is
        /// served until the process exits: a judgement up to 10 s older than the file's would
        /// stay).
        pub(crate) fn publish(&self, profile: &Profile, calls: &HashMap<u32, u64>, last: bool) {
            if profile.windows.is_empty() {
                return;
            }
            let closed_at = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            let mut totals = lock(&self.totals);
            let now = Instant::now();
            let judge = last || totals.next_judgement.is_none_or(|next| now >= next);
            let text = render(profile, &self.job, &mut totals, calls, closed_at, judge);
            if judge {
                let took = now.elapsed();
                totals.next_judgement =
                    Some(Instant::now() + JUDGEMENT_INTERVAL.max(took * JUDGEMENT_SHARE));
            }
            drop(totals);
            let mut served = lock(&self.shared.text);
            // A session replaced by a later one on the same endpoint (its end, say, written
            // after the new one started) publishes no more.
            if self.shared.owner.load(Relaxed) == self.generation {
                *served = Arc::new(text);
            }
        }
    }

    /// The program's file name: the `job` label without `PROF_JOB`.
    fn program() -> String {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "unknown".to_owned())
    }

    /// Binds `addr` (`ADDR:PORT`, checked when read), its port moved by `rank` unless 0.
    pub(crate) fn bind(addr: &str, rank: u32) -> Result<TcpListener, String> {
        let (host, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| format!("PROF_METRICS={addr} has no port"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("PROF_METRICS={addr}: `{port}` is not a port"))?;
        let ranked = if port == 0 {
            0
        } else {
            let sum = u64::from(port) + u64::from(rank);
            u16::try_from(sum).map_err(|_| {
                format!(
                    "PROF_METRICS={addr}: rank {rank} would listen on port {sum} (the port plus \
                     the rank), past 65535"
                )
            })?
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let candidates: Vec<SocketAddr> = (host, ranked)
            .to_socket_addrs()
            .map_err(|why| format!("PROF_METRICS={addr}: cannot resolve `{host}` ({why})"))?
            .collect();
        let mut last = None;
        for candidate in candidates {
            match TcpListener::bind(candidate) {
                Ok(listener) => return Ok(listener),
                Err(why) => last = Some((candidate, why)),
            }
        }
        Err(match last {
            Some((candidate, why)) => {
                format!("PROF_METRICS={addr}: cannot listen on {candidate} ({why})")
            }
            None => format!("PROF_METRICS={addr}: `{host}` resolves to no address"),
        })
    }

    /// The server thread: each connection is answered on a short-lived thread of its own, at
    /// most [`MAX_OPEN`] at once (more are closed at once), so a slow scraper holds up only
    /// itself. It ends when a later session closes the endpoint ([`Endpoint::close`]).
    fn serve(listener: TcpListener, shared: &Arc<Shared>) {
        for conn in listener.incoming() {
            if shared.stopped.load(Relaxed) {
                break;
            }
            let stream = match conn {
                Ok(stream) => stream,
                Err(_) => {
                    // Out of file descriptors, say: wait rather than spin.
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            if shared.open.fetch_add(1, Relaxed) >= MAX_OPEN {
                shared.open.fetch_sub(1, Relaxed);
                drop(stream);
                continue;
            }
            let one = Arc::clone(shared);
            let spawned = crate::sync::spawn("profiler-metrics-conn", move || {
                answer(stream, &one);
                one.open.fetch_sub(1, Relaxed);
            });
            if spawned.is_err() {
                shared.open.fetch_sub(1, Relaxed);
            }
        }
        drop(listener);
        shared.closed.store(true, Relaxed);
    }

    /// Reads one request (at most [`MAX_REQUEST`] bytes, within [`IO_TIMEOUT`]) and answers it:
    /// `GET /metrics` (or `HEAD`) with the text published last; anything else 404, 405 or 431.
    fn answer(mut stream: TcpStream, shared: &Shared) {
        let deadline = Instant::now() + IO_TIMEOUT;
        let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
        let mut buf = vec![0u8; MAX_REQUEST];
        let mut len = 0;
        let head_end = loop {
            if len == buf.len() {
                break None;
            }
            // Each read waits at most what is left of the request's time.
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
                return;
            }
            match stream.read(&mut buf[len..]) {
                Ok(0) | Err(_) => return,
                Ok(n) => len += n,
            }
            if let Some(end) = find(&buf[..len], b"\r\n\r\n").or_else(|| find(&buf[..len], b"\n\n"))
            {
                break Some(end);
            }
        };
        let (status, body) = match head_end {
            None => ("431 Request Header Fields Too Large", None),
            Some(end) => route(&buf[..end], shared),
        };
        let text = body.clone().unwrap_or_else(|| Arc::new(String::new()));
        let (content_type, payload) = match &body {
            Some(_) => (CONTENT_TYPE, text.as_bytes()),
            None => ("text/plain; charset=utf-8", status.as_bytes()),
        };
        let head_only = buf.starts_with(b"HEAD ");
        let header = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            payload.len()
        );
        if stream.write_all(header.as_bytes()).is_ok() && !head_only {
            let _ = stream.write_all(payload);
        }
        let _ = stream.flush();
        let _ = stream.shutdown(Shutdown::Write);
    }

    /// The status and the body (`None`: the status line's text) of a request whose head is
    /// `head`.
    fn route(head: &[u8], shared: &Shared) -> (&'static str, Option<Arc<String>>) {
        let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let path = target.split('?').next().unwrap_or("");
        if path != "/metrics" {
            return ("404 Not Found", None);
        }
        if method != "GET" && method != "HEAD" {
            return ("405 Method Not Allowed", None);
        }
        let text = Arc::clone(&lock(&shared.text));
        ("200 OK", Some(text))
    }

    fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack.windows(needle.len()).position(|w| w == needle)
    }

    /// The labels of every series: `job`, `rank`, `host`, then those of an event.
    type Labels = Vec<(&'static str, String)>;

    /// A gauge family of `f64` values.
    type Gauges = Family<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>;

    /// `DriftStatus` as a number: faster -1, stable 0, slower 1, inconclusive 2, unknown 3.
    pub(crate) fn verdict_number(status: DriftStatus) -> f64 {
        match status {
            DriftStatus::Faster => -1.0,
            DriftStatus::Stable => 0.0,
            DriftStatus::Slower => 1.0,
            DriftStatus::Inconclusive => 2.0,
            DriftStatus::Unknown => 3.0,
        }
    }

    /// Judges the drift of `profile` (whose last window is `index`) as `prof report` does, and
    /// counts the windows in a row judged slower than at the run's start: 1 at the first
    /// judgement that says so, plus the windows closed since at each next one that does too.
    fn judge_drift(profile: &Profile, index: u64, totals: &mut Totals) {
        let since = totals
            .judged_index
            .map_or(1, |last| index.saturating_sub(last).max(1));
        totals.judged_index = Some(index);
        let drift = drift::windows(profile, &DiffOptions::default());
        totals.iteration_judged = drift.as_ref().map(|d| Judged::of(&d.iteration));
        let mut judged = HashMap::new();
        for s in drift.iter().flat_map(|d| d.events.iter()) {
            let Some(order) = s.order else { continue };
            let now = Judged::of(s);
            let before = totals
                .judged
                .get(&order)
                .is_some_and(Judged::slower_since_start);
            let streak = totals.slower.entry(order).or_default();
            *streak = match (now.slower_since_start(), before) {
                (true, true) => *streak + since,
                (true, false) => 1,
                (false, _) => 0,
            };
            judged.insert(order, now);
        }
        totals.judged = judged;
    }

    /// Nanoseconds as seconds.
    fn seconds(ns: u64) -> f64 {
        ns as f64 / 1e9
    }

    /// The series of `profile`'s last closed window, as OpenMetrics text; `measured`: the samples
    /// measured per event (`order`) in every window closed so far, kept or not (counted at each
    /// window's close: a count over the windows a profile keeps missed those closed and
    /// dropped between two publications). `closed_at`: the Unix time it is published.
    /// `judge`: the drift is judged anew (else the last judgement is served).
    pub(crate) fn render(
        profile: &Profile,
        job: &str,
        totals: &mut Totals,
        measured: &HashMap<u32, u64>,
        closed_at: f64,
        judge: bool,
    ) -> String {
        let Some(window) = profile.windows.last() else {
            return "# EOF\n".to_owned();
        };
        if judge {
            judge_drift(profile, window.index, totals);
        }

        let run = &profile.run;
        let base: Labels = vec![
            ("job", job.to_owned()),
            ("rank", run.rank.to_string()),
            ("host", run.host.clone()),
        ];
        let mut registry = Registry::default();
        let gauges = |registry: &mut Registry, name: &str, help: &str, unit: Option<Unit>| {
            let family = Gauges::default();
            match unit {
                Some(unit) => registry.register_with_unit(name, help, unit, family.clone()),
                None => registry.register(name, help, family.clone()),
            }
            family
        };
        let median = gauges(
            &mut registry,
            "prof_event_median",
            "Median duration of the event's samples in the last closed window",
            Some(Unit::Seconds),
        );
        let p90 = gauges(
            &mut registry,
            "prof_event_p90",
            "90th percentile (nearest rank) of the event's samples in the last closed window",
            Some(Unit::Seconds),
        );
        let fastest = gauges(
            &mut registry,
            "prof_event_fastest",
            "Fastest-5% estimate of the event's samples in the last closed window (the drift \
             verdicts' estimator)",
            Some(Unit::Seconds),
        );
        let calls = Family::<Labels, Counter<u64>>::default();
        registry.register(
            "prof_event_calls",
            "Samples measured of the event in the closed windows published so far",
            calls.clone(),
        );
        let share = gauges(
            &mut registry,
            "prof_event_share_ratio",
            "The event's median over the iteration's median in the last closed window",
            None,
        );
        let flops = gauges(
            &mut registry,
            "prof_event_flops_per_second",
            "FLOP/s of the event in the last closed window (its flops key over its samples' time)",
            None,
        );
        let bytes = gauges(
            &mut registry,
            "prof_event_bytes_per_second",
            "Bytes/s of the event in the last closed window (its bytes key over its samples' time)",
            None,
        );
        let verdict = gauges(
            &mut registry,
            "prof_drift_verdict",
            "Drift of the event as prof report judges it (against: headline, start, \
             recent_past): -1 faster, 0 stable, 1 slower, 2 inconclusive, 3 unknown",
            None,
        );
        let change = gauges(
            &mut registry,
            "prof_drift_change_ratio",
            "The event's median in the last kept window over its median in the first",
            None,
        );
        let slower_windows = gauges(
            &mut registry,
            "prof_drift_slower_windows",
            "Windows closed in a row while the event's drift against the run's start said slower",
            None,
        );
        let iteration = gauges(
            &mut registry,
            "prof_iteration_median",
            "Median wall time of the iterations of the last closed window",
            Some(Unit::Seconds),
        );
        let iteration_verdict = gauges(
            &mut registry,
            "prof_iteration_drift_verdict",
            "Drift of the iteration's wall time (against: headline, start, recent_past): -1 \
             faster, 0 stable, 1 slower, 2 inconclusive, 3 unknown",
            None,
        );
        let index = gauges(
            &mut registry,
            "prof_window_index",
            "Index of the last closed window (0: the run's first after warmup)",
            None,
        );
        let closed = gauges(
            &mut registry,
            "prof_window_closed_timestamp",
            "Unix time at which the last closed window was published (within a second of its \
             close)",
            Some(Unit::Seconds),
        );
        let floor = gauges(
            &mut registry,
            "prof_timer_floor",
            "The profiler's own cost in every sample: the median of an empty measurement, \
             included in each duration",
            Some(Unit::Seconds),
        );

        let iteration_median = Stats::of(&window.wall_ns).median_ns;
        iteration
            .get_or_create(&base)
            .set(seconds(iteration_median));
        index.get_or_create(&base).set(window.index as f64);
        closed.get_or_create(&base).set(closed_at);
        floor.get_or_create(&base).set(seconds(run.timer_floor_ns));

        let judged = |family: &Gauges, labels: &Labels, j: &Judged| {
            for (against, status) in ["headline", "start", "recent_past"]
                .into_iter()
                .zip(j.verdicts)
            {
                let mut labels = labels.clone();
                labels.push(("against", against.to_owned()));
                family.get_or_create(&labels).set(verdict_number(status));
            }
        };
        if let Some(j) = &totals.iteration_judged {
            judged(&iteration_verdict, &base, j);
        }

        let events: HashMap<u32, &profiler_format::Event> =
            profile.events.iter().map(|e| (e.order, e)).collect();
        for we in &window.events {
            let Some(event) = events.get(&we.order) else {
                continue;
            };
            // An event that did not run in the window (it stopped running) has no series: they
            // go stale, rather than say it took 0 s and did not change.
            if we.stats.count == 0 {
                continue;
            }
            let mut labels = base.clone();
            // `id` (and the stream) tell apart events that share the others: functions of one
            // name in two modules, runtime probes whose names differ only where a name is not
            // a label, a probe on two streams. Without them their series were one, mixed.
            labels.extend([
                ("layer", event.layer.clone().unwrap_or_default()),
                ("phase", event.phase.clone().unwrap_or_default()),
                ("event", event.name.clone()),
                ("occurrence", event.occurrence.to_string()),
                ("id", event.id.clone()),
                ("stream", event.stream.clone().unwrap_or_default()),
            ]);
            median
                .get_or_create(&labels)
                .set(seconds(we.stats.median_ns));
            p90.get_or_create(&labels).set(seconds(we.stats.p90_ns));
            if !we.samples_ns.is_empty() {
                let values: Vec<f64> = we.samples_ns.iter().map(|&ns| ns as f64).collect();
                let fast = profiler_analysis::stats::fast(&values);
                fastest.get_or_create(&labels).set(fast / 1e9);
            }
            calls
                .get_or_create(&labels)
                .inc_by(measured.get(&we.order).copied().unwrap_or(0));
            if iteration_median > 0 {
                share
                    .get_or_create(&labels)
                    .set(we.stats.median_ns as f64 / iteration_median as f64);
            }
            // The work is recorded per sample in `events`, which shows the last closed window.
            if let Some(work) = &event.work {
                let time: u64 = event.samples_ns.iter().sum();
                for (family, counted) in [(&flops, &work.flops), (&bytes, &work.bytes)] {
                    if let (Some(counted), true) = (counted, time > 0) {
                        let total: u64 = counted.iter().sum();
                        family
                            .get_or_create(&labels)
                            .set(total as f64 / seconds(time));
                    }
                }
            }
            if let Some(j) = totals.judged.get(&we.order) {
                judged(&verdict, &labels, j);
                let streak = totals.slower.get(&we.order).copied().unwrap_or(0);
                slower_windows.get_or_create(&labels).set(streak as f64);
                if let Some(c) = j.change {
                    change.get_or_create(&labels).set(1.0 + c);
                }
            }
        }
        let mut text = String::new();
        if encode(&mut text, &registry).is_err() {
            return "# EOF\n".to_owned();
        }
        text
    }
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use super::served::{bind, render, Metrics, Totals, MAX_REQUEST};
    use crate::select::config::{Config, Mode};
    use profiler_format::Profile;
    use std::collections::HashMap;
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::time::Duration;

    /// A recorded continuous-mode run (dlrm, a layer slowed part-way).
    fn recorded() -> Profile {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../profiler-cli/tests/data/cli/continuous-slow.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// The value of the series `name` whose labels include every one of `labels`.
    fn value(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .find(|l| labels.iter().all(|want| l.contains(want)))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    }

    #[test]
    fn every_series_of_the_last_window_equals_the_file() {
        let profile = recorded();
        let window = profile.windows.last().unwrap();
        let text = render(
            &profile,
            "train",
            &mut Totals::default(),
            &kept(&profile),
            1.5e9,
            true,
        );
        for line in [
            "# TYPE prof_event_median_seconds gauge",
            "# UNIT prof_event_median_seconds seconds",
            "# HELP prof_event_p90_seconds ",
            "# TYPE prof_event_fastest_seconds gauge",
            "# TYPE prof_event_calls counter",
            "# TYPE prof_event_share_ratio gauge",
            "# TYPE prof_drift_verdict gauge",
            "# TYPE prof_drift_change_ratio gauge",
            "# TYPE prof_iteration_median_seconds gauge",
            "# TYPE prof_window_index gauge",
            "# TYPE prof_window_closed_timestamp_seconds gauge",
            "# TYPE prof_timer_floor_seconds gauge",
        ] {
            assert!(text.contains(line), "no `{line}` in:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        let base = [
            "job=\"train\"".to_owned(),
            format!("rank=\"{}\"", profile.run.rank),
            format!("host=\"{}\"", profile.run.host),
        ];
        let base: Vec<&str> = base.iter().map(String::as_str).collect();
        assert_eq!(
            value(&text, "prof_window_index", &base),
            Some(window.index as f64)
        );
        let wall = profiler_format::Stats::of(&window.wall_ns).median_ns;
        assert_eq!(
            value(&text, "prof_iteration_median_seconds", &base),
            Some(wall as f64 / 1e9)
        );
        assert!(!window.events.is_empty());
        for we in &window.events {
            let e = profile.events.iter().find(|e| e.order == we.order).unwrap();
            let labels = [
                format!("event=\"{}\"", e.name),
                format!("occurrence=\"{}\"", e.occurrence),
                format!("layer=\"{}\"", e.layer.clone().unwrap_or_default()),
                format!("phase=\"{}\"", e.phase.clone().unwrap_or_default()),
            ];
            let mut labels: Vec<&str> = labels.iter().map(String::as_str).collect();
            labels.extend(&base);
            let median = value(&text, "prof_event_median_seconds", &labels).unwrap();
            assert_eq!(
                (median * 1e9).round() as u64,
                we.stats.median_ns,
                "{}",
                e.name
            );
            let p90 = value(&text, "prof_event_p90_seconds", &labels).unwrap();
            assert_eq!((p90 * 1e9).round() as u64, we.stats.p90_ns, "{}", e.name);
            let calls: u64 = profile
                .windows
                .iter()
                .flat_map(|w| &w.events)
                .filter(|x| x.order == we.order)
                .map(|x| x.stats.count)
                .sum();
            let got = value(&text, "prof_event_calls_total", &labels).unwrap();
            assert_eq!(got as u64, calls, "{}", e.name);
            let share = value(&text, "prof_event_share_ratio", &labels).unwrap();
            assert!((share - we.stats.median_ns as f64 / wall as f64).abs() < 1e-12);
            let mut headline = labels.clone();
            headline.push("against=\"headline\"");
            assert!(value(&text, "prof_drift_verdict", &headline).is_some());
        }
    }

    #[test]
    fn the_slowed_layer_is_served_as_slower() {
        let profile = recorded();
        let text = judged(&profile, "train");
        let slower = text
            .lines()
            .filter(|l| l.starts_with("prof_drift_verdict{") && l.ends_with(" 1.0"))
            .count();
        assert!(slower > 0, "no event judged slower in:\n{text}");
    }

    #[test]
    fn slower_since_the_start_counts_the_windows_in_a_row() {
        let full = recorded();
        let n = full.windows.len();
        let streaks = |text: &str| -> Vec<u64> {
            text.lines()
                .filter(|l| l.starts_with("prof_drift_slower_windows{"))
                .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
                .collect()
        };
        // Published once: at most one window.
        let once = judged(&full, "j");
        assert!(streaks(&once).iter().all(|&k| k <= 1), "{once}");
        assert!(
            streaks(&once).contains(&1),
            "nothing slower since the start: {once}"
        );
        // Published at each of the last four windows' close: three more.
        let mut totals = Totals::default();
        let mut text = String::new();
        for keep in n - 3..=n {
            let mut profile = full.clone();
            profile.windows.truncate(keep);
            text = render(&profile, "j", &mut totals, &kept(&profile), 0.0, true);
        }
        assert!(streaks(&text).contains(&4), "{text}");
        // Between judgements the last one is served: the same verdicts, the same count.
        let again = render(&full, "j", &mut totals, &kept(&full), 0.0, false);
        let sorted = |mut v: Vec<u64>| {
            v.sort_unstable();
            v
        };
        assert_eq!(sorted(streaks(&again)), sorted(streaks(&text)));
        let verdicts = |t: &str| {
            t.lines()
                .filter(|l| l.starts_with("prof_drift_verdict{"))
                .count()
        };
        assert_eq!(verdicts(&again), verdicts(&text));
        // Not judged yet: no verdict is served.
        let unjudged = render(&full, "j", &mut Totals::default(), &kept(&full), 0.0, false);
        assert_eq!(verdicts(&unjudged), 0);
    }

    /// `profile`'s text for the job `job`, judged now, every window kept counted.
    fn judged(profile: &Profile, job: &str) -> String {
        render(
            profile,
            job,
            &mut Totals::default(),
            &kept(profile),
            0.0,
            true,
        )
    }

    /// The samples of every window kept, per event: what the writer counts at the hand-over
    /// for a run whose every window is kept.
    fn kept(profile: &Profile) -> HashMap<u32, u64> {
        let mut calls = HashMap::new();
        for e in profile.windows.iter().flat_map(|w| &w.events) {
            *calls.entry(e.order).or_default() += e.stats.count;
        }
        calls
    }

    /// Two events that share layer, phase, name and occurrence (a function of one name in two
    /// modules) are two series, told apart by `id`: before, they were one, the last rendered
    /// winning the gauges and the counter adding both. An event with no sample in the window
    /// (it stopped running) has no series, rather than a median of 0 s and a change of 1.
    #[test]
    fn events_alike_but_for_their_id_are_two_series_and_an_event_gone_has_none() {
        let mut profile = recorded();
        let window = profile.windows.last().unwrap().clone();
        let (a, b) = (window.events[0].order, window.events[1].order);
        let name = profile
            .events
            .iter()
            .find(|e| e.order == a)
            .unwrap()
            .clone();
        let twin = profile.events.iter_mut().find(|e| e.order == b).unwrap();
        twin.name = name.name.clone();
        twin.layer = name.layer.clone();
        twin.phase = name.phase.clone();
        twin.occurrence = name.occurrence;
        let text = judged(&profile, "j");
        let medians: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.starts_with("prof_event_median_seconds{")
                    && l.contains(&format!("event=\"{}\"", name.name))
            })
            .collect();
        assert_eq!(medians.len(), 2, "{text}");
        // The event `a` did not run in the last window: its series go.
        let last = profile.windows.last_mut().unwrap();
        let gone = last.events.iter_mut().find(|e| e.order == a).unwrap();
        gone.samples_ns.clear();
        gone.stats = profiler_format::Stats::of(&[]);
        let text = judged(&profile, "j");
        let id = format!("id=\"{}\"", name.id);
        assert!(
            !text
                .lines()
                .any(|l| l.starts_with("prof_") && l.contains(&id)),
            "{text}"
        );
    }

    #[test]
    fn hostile_names_are_escaped() {
        let mut profile = recorded();
        let order = profile.windows.last().unwrap().events[0].order;
        let e = profile
            .events
            .iter_mut()
            .find(|e| e.order == order)
            .unwrap();
        e.name = "a \"quoted\"\\back\nslash} name".to_owned();
        e.layer = Some("l\"\n".to_owned());
        profile.run.host = "h\\".to_owned();
        let text = judged(&profile, "j\"ob");
        assert!(
            text.contains(r#"event="a \"quoted\"\\back\nslash} name""#),
            "{text}"
        );
        assert!(text.contains(r#"layer="l\"\n""#));
        assert!(text.contains(r#"host="h\\""#));
        assert!(text.contains(r#"job="j\"ob""#));
        // Every line is a comment or one series: no raw newline broke one in two.
        for line in text.lines() {
            assert!(
                line.starts_with('#') || line.starts_with("prof_"),
                "{line:?}"
            );
        }
    }

    fn serving() -> (Metrics, SocketAddr) {
        let listener = bind("127.0.0.1:0", 3).unwrap();
        let addr = listener.local_addr().unwrap();
        (Metrics::serving(listener, "t".into()).unwrap(), addr)
    }

    fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let _ = s.write_all(request);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn the_server_answers_metrics_only() {
        let (metrics, addr) = serving();
        let empty = get(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(empty.starts_with("HTTP/1.1 200 OK\r\n"), "{empty}");
        assert!(empty.ends_with("\r\n\r\n# EOF\n"), "{empty}");
        metrics.publish(&recorded(), &kept(&recorded()), false);
        let full = get(addr, b"GET /metrics?x=1 HTTP/1.1\r\n\r\n");
        assert!(full.contains("application/openmetrics-text"));
        assert!(full.contains("prof_event_median_seconds{"));
        assert!(get(addr, b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
        assert!(get(addr, b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405 "));
        let head = get(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 200 ") && head.ends_with("\r\n\r\n"));
    }

    /// The run's final write is judged however recently the drift was: the endpoint serves it
    /// until the process exits. Here the first publication is judged with one window kept (no
    /// verdict), the next, within the 10 s between judgements, repeats that; the last judges
    /// all of them. Before, the last write's drift could be 10 s older than the file's.
    #[test]
    fn the_last_write_is_judged_whenever_the_drift_was() {
        let (metrics, addr) = serving();
        let full = recorded();
        let mut early = full.clone();
        early.windows.truncate(1);
        let verdicts = || {
            get(addr, b"GET /metrics HTTP/1.1\r\n\r\n")
                .lines()
                .filter(|l| l.starts_with("prof_drift_verdict{") && l.ends_with(" 1.0"))
                .count()
        };
        metrics.publish(&early, &kept(&early), false);
        assert_eq!(verdicts(), 0);
        metrics.publish(&full, &kept(&full), false);
        assert_eq!(verdicts(), 0, "judged again within the interval");
        metrics.publish(&full, &kept(&full), true);
        assert!(verdicts() > 0, "the last write was not judged");
    }

    #[test]
    fn a_huge_request_is_cut_short_and_the_server_goes_on() {
        let (_metrics, addr) = serving();
        let mut huge = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        huge.resize(1 << 20, b'a');
        let answer = get(addr, &huge);
        // The server stops reading at its bound and answers 431; the client, still writing,
        // may see the connection reset before it reads that.
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 431 "),
            "{answer}"
        );
        assert!(get(addr, b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200 "));
        const { assert!(MAX_REQUEST < 1 << 20) };
    }

    #[test]
    fn idle_and_silent_connections_do_not_stop_the_others() {
        let (metrics, addr) = serving();
        // A thousand connections that send nothing (and never read), held open.
        let idle: Vec<TcpStream> = (0..1000)
            .filter_map(|_| TcpStream::connect(addr).ok())
            .collect();
        assert!(!idle.is_empty());
        // Publishing never waits for the server.
        metrics.publish(&recorded(), &kept(&recorded()), false);
        drop(idle);
        // Once they are gone, a scrape is answered (the closed ones are answered at once: the
        // read sees the end; the waits are the I/O timeout at worst).
        let mut answered = String::new();
        for _ in 0..50 {
            answered = get(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
            if answered.starts_with("HTTP/1.1 200 ") {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        assert!(answered.contains("prof_window_index{"), "{answered}");
    }

    #[test]
    fn a_taken_port_is_an_error_naming_it() {
        let (_metrics, addr) = serving();
        let why = bind(&addr.to_string(), 0).unwrap_err();
        assert!(why.contains("cannot listen on"), "{why}");
        assert!(why.contains(&addr.to_string()), "{why}");
        let why = bind("127.0.0.1:65535", 1).unwrap_err();
        assert!(why.contains("past 65535"), "{why}");
        // The largest rank: an error naming the port it would take, not an overflow.
        let why = bind("127.0.0.1:9464", u32::MAX).unwrap_err();
        assert!(why.contains("port 4294976759"), "{why}");
    }

    /// The endpoint is the process's: a later session asking the same `PROF_METRICS` takes it
    /// over (before, it found its port taken by the profiler itself: "cannot listen on"), the
    /// session before publishes no more, and one asking for another address closes it. The
    /// only test that starts the process's endpoint.
    #[test]
    fn a_later_session_takes_the_endpoint_over() {
        let config = |addr: &str| Config {
            mode: Mode::Continuous,
            metrics: Some(addr.into()),
            ..Config::default()
        };
        let scrape = |addr| get(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
        let first = Metrics::start(&config("127.0.0.1:0")).unwrap().unwrap();
        let at = Metrics::served_at().unwrap();
        first.publish(&recorded(), &kept(&recorded()), false);
        assert!(scrape(at).contains("prof_window_index{"));

        let second = Metrics::start(&config("127.0.0.1:0")).unwrap().unwrap();
        assert_eq!(Metrics::served_at(), Some(at));
        assert!(scrape(at).ends_with("\r\n\r\n# EOF\n"), "{}", scrape(at));
        first.publish(&recorded(), &kept(&recorded()), false);
        assert!(
            !scrape(at).contains("prof_window_index{"),
            "the first still publishes"
        );
        second.publish(&recorded(), &kept(&recorded()), false);
        assert!(scrape(at).contains("prof_window_index{"));

        // The same port asked by number: the endpoint bound from `:0` closes, and the port is
        // free for it.
        let by_number = format!("127.0.0.1:{}", at.port());
        let third = Metrics::start(&config(&by_number)).unwrap();
        assert!(third.is_some());
        assert_eq!(Metrics::served_at(), Some(at));
        assert!(scrape(at).ends_with("# EOF\n"));

        // Another address: the endpoint before is closed.
        let _fourth = Metrics::start(&config("127.0.0.1:0")).unwrap().unwrap();
        let now = Metrics::served_at().unwrap();
        if now != at {
            assert!(
                std::net::TcpStream::connect(at).is_err(),
                "{at} still listens"
            );
        }
        assert!(scrape(now).starts_with("HTTP/1.1 200 "));

        // A forked worker does not hold the port: its copy of the listening descriptor is
        // closed in the child (before, it stayed bound for as long as the worker lived).
        let fd = Metrics::listening();
        assert!(fd >= 0);
        // SAFETY: the child only calls fcntl(2) and _exit(2), async-signal-safe.
        let child = unsafe { libc::fork() };
        if child == 0 {
            let open = unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1;
            unsafe { libc::_exit(i32::from(open)) };
        }
        let mut status = 0;
        // SAFETY: waitpid(2) on our own child with a valid status pointer.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(libc::WIFEXITED(status));
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "the child still held the port"
        );
        assert!(
            scrape(now).starts_with("HTTP/1.1 200 "),
            "the parent's endpoint closed"
        );
    }

    /// A client that sends its request a byte at a time, each byte within the I/O timeout of
    /// the one before, is cut off once the request's time is up: sixteen such clients held
    /// every connection slot for hours before (the timeout was per read).
    #[test]
    fn a_request_trickled_a_byte_at_a_time_is_cut_off() {
        let (_metrics, addr) = serving();
        let mut slow = TcpStream::connect(addr).unwrap();
        let started = std::time::Instant::now();
        let mut cut = false;
        while started.elapsed() < Duration::from_secs(60) {
            if slow.write_all(b"G").is_err() {
                cut = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        assert!(cut, "still open after 60 s of a byte every 200 ms");
    }
}

#[cfg(all(test, not(feature = "metrics")))]
mod without_the_feature {
    use super::Metrics;
    use crate::select::config::{Config, Mode};

    #[test]
    fn prof_metrics_is_an_error_naming_the_feature() {
        let config = Config {
            mode: Mode::Continuous,
            metrics: Some("127.0.0.1:0".into()),
            ..Config::default()
        };
        let e = Metrics::start(&config).unwrap_err();
        assert_eq!(e.var, "PROF_METRICS");
        assert!(e.to_string().contains("lacks its `metrics` feature"), "{e}");
        assert!(Metrics::start(&Config::default()).unwrap().is_none());
    }
}
