//! `PROF_METRICS`: continuous mode's windows served to Prometheus, from outside: the dlrm
//! example run as a job would run it. Start-up failures (a port taken, the wrong mode), hostile
//! scrapers while it trains (judged by the iterations it completes, never by timings), and a
//! real Prometheus (Debian's `prometheus`, when on PATH; CI installs it and sets
//! `PROF_REQUIRE_PROMETHEUS=1`) scraping two ranks every second: the series it stored equal
//! the windows of each rank's `prof.json`, and the alerting rules of `deploy/prometheus/` fire
//! for the rank slowed on purpose (slower than the others; its layer slower than at its start).
#![cfg(feature = "metrics")]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{default_signals, dlrm, read_json, run, scratch, stderr, stdout};
use serde_json::Value;

#[test]
fn a_taken_port_stops_the_job_before_training_unless_optional() {
    let dir = scratch("metrics-taken");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let vars = [("PROF_MODE", "continuous"), ("PROF_METRICS", addr.as_str())];
    let out = run(&dir, &vars, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
    assert!(err.contains("PROF_METRICS_OPTIONAL=1"), "{err}");
    // Before the body: not one iteration ran, nothing was written.
    assert!(!stdout(&out).contains("iter "), "{}", stdout(&out));
    assert!(!dir.join("prof.json").exists());

    let vars = [
        ("PROF_MODE", "continuous"),
        ("PROF_METRICS", addr.as_str()),
        ("PROF_METRICS_OPTIONAL", "1"),
    ];
    let out = run(&dir, &vars, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("training goes on without the Prometheus endpoint"));
    assert!(
        stdout(&out).contains("done: 400 iterations"),
        "{}",
        stdout(&out)
    );
    drop(taken);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn metrics_outside_continuous_mode_is_refused() {
    let dir = scratch("metrics-mode");
    let out = run(&dir, &[("PROF_METRICS", "127.0.0.1:0")], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("PROF_MODE=continuous"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A port below 1024 for a user without the capability: refused at start-up like a taken one. As
/// root (CI runs as root), dlrm is run as `nobody` through util-linux's `setpriv`, where it is
/// there; without it the test says that it skips.
#[cfg(unix)]
#[test]
fn a_privileged_port_is_refused_for_a_user() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("metrics-privileged");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("SKIPPED: running as root without setpriv to run dlrm as a user");
            return;
        }
        // nobody writes nothing here (it stops before its first iteration), but may.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(dlrm());
        cmd
    } else {
        Command::new(dlrm())
    };
    for (k, _) in std::env::vars() {
        if k.starts_with("PROF_") || k == "RANK" {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .current_dir(&dir)
        .args(["--batch", "8", "--iters", "400"])
        .env("PROF_MODE", "continuous")
        .env("PROF_METRICS", "127.0.0.1:80")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot listen on 127.0.0.1:80 (Permission denied"),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("iter "), "{}", stdout(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A dlrm rank running with `PROF_METRICS`, its endpoint's address read from its stderr.
struct Rank {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl Rank {
    fn start(dir: &Path, rank: u32, vars: &[(&str, &str)], args: &[&str]) -> Rank {
        let mut cmd = Command::new(dlrm());
        cmd.current_dir(dir).args(args);
        for (k, _) in std::env::vars() {
            if k.starts_with("PROF_") || k == "RANK" {
                cmd.env_remove(k);
            }
        }
        cmd.env("RANK", rank.to_string())
            .env("PROF_MODE", "continuous")
            .env("PROF_METRICS", "127.0.0.1:0")
            .env("PROF_OUT", "prof-%r.json")
            .env("PROF_WARMUP", "2")
            .env("PROF_REPEAT", "5")
            // The drift is judged over every window kept: few, so that a debug build judges
            // it often. A scraped window dropped from the file since is not compared.
            .env("PROF_WINDOWS", "30");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        // The rank is ended with SIGTERM, which a test run started in the background may
        // inherit ignored.
        default_signals(&mut cmd);
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("metrics on http://").nth(1) {
                    let _ = tx.send(rest.trim_end_matches("/metrics").to_owned());
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the rank never said where its metrics are")
            .parse()
            .unwrap();
        Rank {
            child,
            addr,
            dir: dir.to_owned(),
        }
    }

    /// Waits for the rank to end by itself; its stdout.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        (self.child.wait().unwrap(), out)
    }

    /// Ends the rank with SIGTERM (it writes its file and exits).
    fn stop(mut self) -> PathBuf {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
        self.dir.clone()
    }
}

/// A test that fails part-way leaves no rank running.
impl Drop for Rank {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child process killed when the test ends, whichever way.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP request (1.0: the answer is not chunked); the status code and the body.
fn http(addr: SocketAddr, request: &str) -> Option<(u32, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    s.write_all(request.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let code = out.split(' ').nth(1)?.parse().ok()?;
    let body = out.split_once("\r\n\r\n")?.1.to_owned();
    Some((code, body))
}

fn get(addr: SocketAddr, path: &str) -> Option<(u32, String)> {
    http(
        addr,
        &format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n"),
    )
}

/// Hostile scrapers while the job trains: a thousand connections held open, one that asks and
/// never reads, a request of 1 MB, a scraper gone mid-response. The job completes every
/// iteration it was asked for, and its endpoint still answers afterwards.
#[cfg(unix)]
#[test]
fn hostile_scrapers_never_stall_the_training_loop() {
    let dir = scratch("metrics-hostile");
    // Long enough (seconds) that the loop is still running when every hostile connection is
    // in place; the verdict is the count of iterations completed, not a time.
    let iters = "10000";
    let rank = Rank::start(&dir, 0, &[], &["--batch", "8", "--iters", iters]);
    let addr = rank.addr;
    // Asks, and never reads the answer.
    let mut mute = TcpStream::connect(addr).unwrap();
    mute.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    // A request of 1 MB.
    if let Ok(mut big) = TcpStream::connect(addr) {
        let _ = big.set_write_timeout(Some(Duration::from_secs(10)));
        let mut request = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        request.resize(1 << 20, b'a');
        let _ = big.write_all(&request);
    }
    // Gone mid-response: reads a few bytes and resets the connection.
    for _ in 0..20 {
        if let Ok(mut s) = TcpStream::connect(addr) {
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n");
            let mut few = [0u8; 16];
            let _ = s.read(&mut few);
            let _ = s.set_linger_zero();
        }
    }
    // A thousand connections held open, silent (as many as this process's descriptors allow).
    let held: Vec<TcpStream> = (0..1000)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    assert!(held.len() > 100, "only {} connections", held.len());
    let mut rank = rank;
    let running = rank.child.try_wait().unwrap().is_none();
    eprintln!("the loop was still running with every hostile connection in place: {running}");
    let (status, out) = rank.finish();
    drop((held, mute));
    assert!(status.success(), "{status:?}");
    assert!(
        out.contains(&format!("done: {iters} iterations")),
        "the loop stopped short: {out}"
    );
    let profile = read_json(&dir.join("prof-0.json"));
    assert_eq!(
        profile["iterations"]["count"],
        iters.parse::<u64>().unwrap()
    );
    assert!(!profile["windows"].as_array().unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `prof_event_calls_total` counts every sample measured, including the windows closed and
/// dropped between two publications: one event, one sample a window, one window kept, so the
/// counter is at least the windows closed (the last one's index + 1; the count may run ahead
/// of the window served by the windows closed since). Before, it counted the windows the
/// published profile kept: 7 after 8,000 windows. Each event's series carry its probe's `id`.
#[cfg(unix)]
#[test]
fn calls_count_every_window_closed_and_series_carry_the_id() {
    let dir = scratch("metrics-calls");
    let vars = [
        ("PROF_FILTER", "name=lookup"),
        ("PROF_REPEAT", "1"),
        ("PROF_WINDOWS", "1"),
        ("PROF_BASELINE_WINDOWS", "0"),
    ];
    let rank = Rank::start(&dir, 0, &vars, &["--batch", "8", "--iters", "100000000"]);
    let addr = rank.addr;
    let mut seen = None;
    let served = wait_for(Duration::from_secs(240), || {
        let Some((200, body)) = get(addr, "/metrics") else {
            return false;
        };
        let number = |prefix: &str| {
            body.lines()
                .find(|l| l.starts_with(prefix))
                .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        };
        let (Some(index), Some(calls)) = (
            number("prof_window_index{"),
            number("prof_event_calls_total{"),
        ) else {
            return false;
        };
        seen = Some((index, calls, body.clone()));
        index >= 20.0
    });
    let (index, calls, body) = seen.expect("no window served");
    assert!(served, "fewer than 21 windows closed: {body}");
    assert!(
        calls >= index + 1.0,
        "{calls} calls counted by window {index}:\n{body}"
    );
    assert!(
        body.lines()
            .any(|l| l.starts_with("prof_event_median_seconds{")
                && l.contains("id=\"dlrm::Embedding::lookup\"")),
        "{body}"
    );
    rank.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The job stopped (SIGTERM, as a scheduler stops it) while scrapers are in the middle of their
/// exchange (one asked and never reads, one sent half a request, others connected and silent):
/// it writes its results and ends of the signal, never held up by the endpoint's threads. The
/// wait is bounded only as a guard against a hang.
#[cfg(unix)]
#[test]
fn a_job_stopped_mid_scrape_writes_its_results_and_ends() {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("metrics-stopped");
    let mut rank = Rank::start(&dir, 0, &[], &["--batch", "8", "--iters", "100000000"]);
    let addr = rank.addr;
    let served = wait_for(Duration::from_secs(120), || {
        get(addr, "/metrics")
            .is_some_and(|(code, body)| code == 200 && body.contains("prof_window_index"))
    });
    assert!(served, "no window served");
    let mut mute = TcpStream::connect(addr).unwrap();
    mute.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(b"GET /metr").unwrap();
    let held: Vec<TcpStream> = (0..50)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(rank.child.id() as i32, libc::SIGTERM);
    }
    let start = Instant::now();
    let status = loop {
        if let Some(status) = rank.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the job did not end after SIGTERM with scrapers connected"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    drop((mute, half, held));
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let profile = read_json(&dir.join("prof-0.json"));
    assert_eq!(profile["complete"], false);
    assert!(!profile["windows"].as_array().unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `set_linger(0)`: closing sends a reset, as a killed scraper's kernel would.
trait LingerZero {
    fn set_linger_zero(&self) -> std::io::Result<()>;
}

#[cfg(unix)]
impl LingerZero for TcpStream {
    fn set_linger_zero(&self) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: a valid socket and a `linger` of the size given.
        let rc = unsafe {
            libc::setsockopt(
                self.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// Percent-encodes a PromQL query for a URL.
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `/api/v1/query`'s result, or `None` while the server cannot answer.
fn query(prom: SocketAddr, q: &str) -> Option<Vec<Value>> {
    let (code, body) = get(prom, &format!("/api/v1/query?query={}", encode(q)))?;
    if code != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"].as_array().cloned()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `ready` every 200 ms until it holds, for at most `limit`.
fn wait_for(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

#[cfg(unix)]
#[test]
fn a_real_prometheus_scrapes_two_ranks_and_alerts_on_the_slow_one() {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("PROF_REQUIRE_PROMETHEUS").is_none(),
            "PROF_REQUIRE_PROMETHEUS is set and `prometheus` is not on PATH"
        );
        eprintln!(
            "SKIPPED: `prometheus` is not on PATH (apt-get install prometheus; CI installs it)"
        );
        return;
    }
    let dir = scratch("metrics-prometheus");
    let args = ["--batch", "16", "--iters", "100000000"];
    let fast = Rank::start(&dir, 0, &[], &args);
    // Rank 1's top MLP backward pass waits 50 times its own time from iteration 400 on.
    let slow_args = [
        &args[..],
        &[
            "--slow",
            "top_mlp",
            "--slow-by",
            "5000",
            "--slow-from",
            "400",
        ],
    ]
    .concat();
    let slow = Rank::start(&dir, 1, &[], &slow_args);

    // The shipped rules, the alert's `for` shortened so that one evaluation fires it.
    let rules_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/rules.yml");
    let rules = std::fs::read_to_string(rules_path).unwrap();
    assert!(rules.contains("for: 1m"));
    std::fs::write(dir.join("rules.yml"), rules.replace("for: 1m", "for: 0s")).unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [rules.yml]\n\
         scrape_configs:\n  - job_name: prof\n    honor_labels: true\n    static_configs:\n      \
         - targets: [\"{}\", \"{}\"]\n",
        fast.addr, slow.addr
    );
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let prom: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let server = Command::new("prometheus")
        .current_dir(&dir)
        .arg("--config.file=prometheus.yml")
        .arg("--storage.tsdb.path=tsdb")
        .arg(format!("--web.listen-address={prom}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .unwrap();
    let server = Killed(server);
    let ready = wait_for(Duration::from_secs(60), || {
        get(prom, "/-/ready").is_some_and(|(code, _)| code == 200)
    });
    assert!(ready, "prometheus did not start: see {}", dir.display());

    // Event-driven: at least 4 windows of each rank scraped, and the alert firing.
    let windows_seen = |rank: &str| {
        let q = format!("changes(prof_window_index{{rank=\"{rank}\"}}[10m]) + 1");
        query(prom, &q)
            .and_then(|r| r.first()?["value"][1].as_str()?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Each rank's file as it is rewritten (at most once a second, the same profile rendered for
    // the scrapes), read every 200 ms while waiting: every window a version of the file held,
    // by rank and window index. The scraped windows are compared with these, so that how fast
    // the windows close (and so how long one stays among the file's last `PROF_WINDOWS`) does
    // not decide how many are compared.
    let mut held: [std::collections::BTreeMap<u64, Value>; 2] = Default::default();
    let rank_dirs = [fast.dir.clone(), slow.dir.clone()];
    let read_files = |held: &mut [std::collections::BTreeMap<u64, Value>; 2]| {
        for (rank, dir) in rank_dirs.iter().enumerate() {
            let Ok(text) = std::fs::read_to_string(dir.join(format!("prof-{rank}.json"))) else {
                continue;
            };
            let Ok(profile) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            for w in profile["windows"].as_array().into_iter().flatten() {
                if let Some(i) = w["index"].as_u64() {
                    held[rank].entry(i).or_insert_with(|| w.clone());
                }
            }
        }
    };
    let done = wait_for(Duration::from_secs(240), || {
        read_files(&mut held);
        windows_seen("0") >= 4.0
            && windows_seen("1") >= 4.0
            && query(
                prom,
                "ALERTS{alertname=\"ProfRankSlowerThanOthers\",alertstate=\"firing\",rank=\"1\"}",
            )
            .is_some_and(|r| !r.is_empty())
            && query(
                prom,
                "ALERTS{alertname=\"ProfLayerSlowerThanStart\",alertstate=\"firing\",rank=\"1\",layer=\"top_mlp\"}",
            )
            .is_some_and(|r| !r.is_empty())
    });
    let firing = query(prom, "ALERTS{alertstate=\"firing\"}").unwrap_or_default();
    let dirs = [fast.stop(), slow.stop()];
    read_files(&mut held);
    assert!(
        done,
        "after 240 s: windows of rank 0 {}, of rank 1 {}, alerts {firing:?}",
        windows_seen("0"),
        windows_seen("1")
    );
    let fired = |name: &str| {
        firing
            .iter()
            .any(|a| a["metric"]["alertname"] == name && a["metric"]["rank"] == "1")
    };
    assert!(fired("ProfRankSlowerThanOthers"), "{firing:?}");
    assert!(fired("ProfLayerSlowerThanStart"), "{firing:?}");

    // Every scraped sample of every rank against that rank's file, window by window.
    let range = |name: &str| query(prom, &format!("{name}[10m]")).unwrap();
    let (index, medians, p90s, iterations) = (
        range("prof_window_index"),
        range("prof_event_median_seconds"),
        range("prof_event_p90_seconds"),
        range("prof_iteration_median_seconds"),
    );
    drop(server);
    let mut compared = 0;
    for (rank, dir) in dirs.iter().enumerate() {
        let rank = rank.to_string();
        let profile = read_json(&dir.join(format!("prof-{rank}.json")));
        let windows = profile["windows"].as_array().unwrap();
        let window_at = series_of(&index, &rank, |_| true);
        assert!(!window_at.is_empty());
        let mut windows_compared = 0;
        for (t, w) in &window_at[0] {
            let w = *w as u64;
            let held = &held[rank.parse::<usize>().unwrap()];
            let Some(window) = windows
                .iter()
                .find(|x| x["index"] == w)
                .or_else(|| held.get(&w))
            else {
                // Only a window that no version of the file read held: one written and
                // replaced between two reads, or dropped before the end's write.
                let oldest = windows
                    .iter()
                    .filter(|x| x["baseline"] != true)
                    .map(|x| &x["index"]);
                let oldest = oldest.filter_map(Value::as_u64).min().unwrap();
                assert!(
                    w < oldest,
                    "rank {rank}: window {w} scraped, not in the file"
                );
                continue;
            };
            windows_compared += 1;
            let wall: Vec<u64> = window["wall_ns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            let at = |family: &[Value], labels: &dyn Fn(&Value) -> bool| {
                series_of(family, &rank, labels)
                    .iter()
                    .find_map(|s| s.iter().find(|(ts, _)| ts == t).map(|(_, v)| *v))
            };
            let iteration = at(&iterations, &|_| true).unwrap();
            let expected = profiler_format::Stats::of(&wall).median_ns;
            assert_eq!(ns(iteration), expected, "rank {rank} window {w}: iteration");
            for we in window["events"].as_array().unwrap() {
                let e = profile["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|e| e["order"] == we["order"])
                    .unwrap();
                let same = |m: &Value| {
                    m["event"] == e["name"]
                        && m["occurrence"] == e["occurrence"].to_string().as_str()
                        && m["layer"].as_str().unwrap_or("") == e["layer"].as_str().unwrap_or("")
                        && m["phase"].as_str().unwrap_or("") == e["phase"].as_str().unwrap_or("")
                };
                let median = at(&medians, &same)
                    .unwrap_or_else(|| panic!("rank {rank} window {w}: no {}", e["name"]));
                assert_eq!(ns(median), we["stats"]["median_ns"].as_u64().unwrap());
                let p90 = at(&p90s, &same).unwrap();
                assert_eq!(ns(p90), we["stats"]["p90_ns"].as_u64().unwrap());
                compared += 1;
            }
        }
        assert!(
            windows_compared >= 3,
            "rank {rank}: {windows_compared} windows compared"
        );
    }
    assert!(compared > 0);
    eprintln!("{compared} event windows compared with the ranks' files");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Seconds as Prometheus returns them, in nanoseconds.
fn ns(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

/// The raw samples (timestamp in ms, value) of each series of `family` of `rank` whose
/// labels `keep` accepts.
fn series_of(family: &[Value], rank: &str, keep: impl Fn(&Value) -> bool) -> Vec<Vec<(i64, f64)>> {
    family
        .iter()
        .filter(|s| s["metric"]["rank"] == rank && keep(&s["metric"]))
        .map(|s| {
            s["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    let t = (p[0].as_f64().unwrap() * 1000.0).round() as i64;
                    (t, p[1].as_str().unwrap().parse().unwrap())
                })
                .collect()
        })
        .collect()
}

/// `deploy/prometheus/targets.sh`: the `file_sd` JSON of a launcher's hosts, ranks numbered host
/// by host on `PORT + rank` (the job's rank, as each rank binds: before, the second host's
/// ranks were listed on the first host's ports), written atomically; bad input is refused with
/// status 2.
#[cfg(unix)]
#[test]
fn targets_sh_writes_file_sd_json_from_a_host_list() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/targets.sh");
    let dir = scratch("metrics-targets");
    let out = dir.join("job.json");
    let status = Command::new(&script)
        .args([
            "--hosts",
            "node1,node2",
            "--ranks-per-host",
            "3",
            "--port",
            "9464",
        ])
        .args(["--out", out.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let groups = read_json(&out);
    let targets: Vec<Vec<&str>> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let t = g["targets"].as_array().unwrap();
            t.iter().map(|t| t.as_str().unwrap()).collect()
        })
        .collect();
    assert_eq!(
        targets,
        [
            ["node1:9464", "node1:9465", "node1:9466"],
            ["node2:9467", "node2:9468", "node2:9469"]
        ]
    );
    // Nothing but the named output is written.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["job.json"]);
    for bad in [
        &["--hosts", "a", "--ranks-per-host", "0", "--port", "9464"][..],
        &["--hosts", "a", "--ranks-per-host", "2", "--port", "65535"],
        &["--hosts", "a b", "--ranks-per-host", "2", "--port", "9464"],
        &["--hosts", "a", "--port", "9464"],
    ] {
        let o = Command::new(&script).args(bad).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        assert!(!o.stderr.is_empty(), "{bad:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
