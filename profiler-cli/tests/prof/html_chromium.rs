//! The HTML report (`prof html`) drawn by a real browser: headless Chromium loads each page from a
//! file, runs its script and dumps the resulting DOM, in which the page's script has set
//! `data-rendered="ok"` on `<body>` and recorded no error (`data-errors`). Profiles: two real
//! dlrm runs (`tests/data/html/`, made with PROF_WARMUP=3 PROF_REPEAT=5, the second with
//! `--batch 256`), alone and compared, an edge case (one event without samples, no layer, no
//! iteration), and one whose names try to break out of the page's markup. The flame graph's
//! frame must load and draw every frame with a width on screen.
//!
//! The browser is `$PROF_CHROMIUM`, else `/usr/bin/chromium`, else `chromium` on `PATH` (Debian's
//! `chromium` package), launched once for all the pages of this process and driven over its
//! DevTools pipe (a new tab per page, its DOM read once the page's load event fired, as
//! `--dump-dom` does; a launch per page took about a second each). Without one the browser checks are skipped with a message, unless
//! `PROF_REQUIRE_CHROMIUM=1` (as in CI), which makes a missing browser a failure. The static
//! checks (self-contained, parseable data, size) always run.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use profiler_analysis::html::html_report;
use profiler_analysis::load_profile;
use profiler_format::{Profile, Stats};

/// How long one page may take to load and draw.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

fn fixture(name: &str) -> Profile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/html")
        .join(name);
    load_profile(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh directory under the target's scratch space.
fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "html-chromium-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The text of the `<script type="application/json" id="data">` element.
fn data_block(html: &str) -> &str {
    let open = "<script type=\"application/json\" id=\"data\">";
    let start = html.find(open).expect("no data block") + open.len();
    let len = html[start..]
        .find("</script>")
        .expect("data block not closed");
    &html[start..start + len]
}

/// Checks that need no browser: nothing is fetched, the data parses, the fallback is there.
fn check_static(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    let lower = html.to_ascii_lowercase();
    // The SVG namespace is a name, not a resource; any other URL would be. The flame graph is
    // checked on its own, below: its script (inferno's) names URLs in comments and messages.
    let rest = without_flame(&lower).replace("'http://www.w3.org/2000/svg'", "");
    for bad in [
        "http://",
        "https://",
        "<script src",
        "<link",
        "src=",
        "href=",
        "url(",
        "@import",
        "<iframe",
        "<img",
    ] {
        assert!(!rest.contains(bad), "the page references `{bad}`");
    }
    assert!(lower.contains("content-security-policy") && lower.contains("default-src 'none'"));
    assert!(lower.contains("<noscript>"));
    let data: serde_json::Value =
        serde_json::from_str(data_block(html)).expect("the data block is not JSON");
    assert!(data["report"]["events"].is_array());
    if let Some(svg) = data["flame"].as_str() {
        // inferno's SVG with its script, referencing nothing: no link, no image, no style
        // import; `url(#id)` only (its background gradient, within the document).
        assert!(svg.starts_with("<svg") && svg.contains("<script"));
        let svg = svg.to_ascii_lowercase();
        for bad in [
            "href=",
            "src=",
            "<image",
            "<use",
            "@import",
            "<iframe",
            "<foreignobject",
        ] {
            assert!(!svg.contains(bad), "the flame graph references `{bad}`");
        }
        assert_eq!(svg.matches("url(").count(), svg.matches("url(#").count());
    }
    // Three scripts: the error recorder, the data, the page's code.
    assert_eq!(
        lower.matches("<script").count(),
        3,
        "unexpected <script> elements"
    );
}

/// The page without the flame graph's SVG (the JSON string after `"flame":`).
fn without_flame(html: &str) -> String {
    let key = "\"flame\":\"";
    let Some(at) = html.find(key) else {
        return html.to_owned();
    };
    let start = at + key.len();
    let mut escaped = false;
    for (k, c) in html[start..].char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return format!("{}{}", &html[..start], &html[start + k..]),
            _ => escaped = false,
        }
    }
    html.to_owned()
}

/// The browser to use, or why there is none.
fn chromium() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("PROF_CHROMIUM") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("PROF_CHROMIUM={} is not a file", path.display()))
        };
    }
    let default = PathBuf::from("/usr/bin/chromium");
    if default.is_file() {
        return Ok(default);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "no Chromium (set PROF_CHROMIUM, or install Debian's `chromium` package)".to_owned()
        })
}

/// Loads `page` in headless Chromium and returns the DOM once the page has loaded, or `None` when
/// there is no browser and none is required. One browser serves every page of this process (a
/// launch is about a second of the machine's time, and there are 15 pages).
fn dump_dom(page: &Path) -> Option<String> {
    static BROWSER: Mutex<Option<Browser>> = Mutex::new(None);
    let browser_path = match chromium() {
        Ok(b) => b,
        Err(why) => {
            if std::env::var("PROF_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
                panic!("PROF_REQUIRE_CHROMIUM=1 but {why}");
            }
            println!("Chromium check skipped: {why}");
            return None;
        }
    };
    let mut held = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let browser = held.get_or_insert_with(|| Browser::launch(&browser_path));
    let dom = browser.dump_dom(page);
    if dom.is_err() {
        *held = None; // a failed browser is not reused
    }
    Some(dom.unwrap_or_else(|why| panic!("{}: {why}", browser_path.display())))
}

/// Headless Chromium driven over its DevTools pipe (`--remote-debugging-pipe`): commands go in
/// on its file descriptor 3 and replies and events come out on 4, each a JSON text ended by a NUL
/// byte. It ends when this process does (its end of the pipe closes), or when dropped.
struct Browser {
    child: std::process::Child,
    to: File,
    from: std::sync::mpsc::Receiver<Value>,
    next: u64,
    stderr: PathBuf,
}

impl Browser {
    fn launch(path: &Path) -> Browser {
        use std::io::{BufRead, BufReader};
        use std::os::fd::{AsRawFd, FromRawFd};
        use std::os::unix::process::CommandExt;
        let pipe = || {
            let mut fds = [0; 2];
            // SAFETY: pipe2 writes two descriptors into `fds`, owned by the Files made below.
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            // SAFETY: fresh descriptors, each owned once.
            unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
        };
        let (commands_read, commands_write) = pipe();
        let (replies_read, replies_write) = pipe();
        let dir = scratch("browser");
        let stderr = dir.join("chromium.stderr");
        let (fd3, fd4) = (commands_read.as_raw_fd(), replies_write.as_raw_fd());
        let mut cmd = Command::new(path);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--mute-audio",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&stderr).unwrap());
        // SAFETY: only fcntl(2) and dup2(2), async-signal-safe, between fork and exec: the two
        // pipe ends become descriptors 3 and 4 (first copied above both, in case one of them is
        // already 3 or 4), without close-on-exec.
        unsafe {
            cmd.pre_exec(move || {
                let high3 = libc::fcntl(fd3, libc::F_DUPFD_CLOEXEC, 10);
                let high4 = libc::fcntl(fd4, libc::F_DUPFD_CLOEXEC, 10);
                if high3 < 0 || high4 < 0 || libc::dup2(high3, 3) < 0 || libc::dup2(high4, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
        drop((commands_read, replies_write));
        let (send, from) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut replies = BufReader::new(replies_read);
            let mut message = Vec::new();
            while replies.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                message.pop();
                let Ok(value) = serde_json::from_slice::<Value>(&message) else {
                    break;
                };
                if send.send(value).is_err() {
                    break;
                }
                message.clear();
            }
        });
        Browser {
            child,
            to: commands_write,
            from,
            next: 0,
            stderr,
        }
    }

    /// Sends a command (to the page's session when `session` is given) and waits for its
    /// result; events met on the way go to `event`.
    fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        mut event: impl FnMut(&Value),
        deadline: Instant,
    ) -> Result<Value, String> {
        use std::io::Write;
        self.next += 1;
        let mut command = serde_json::json!({"id": self.next, "method": method, "params": params});
        if let Some(s) = session {
            command["sessionId"] = s.into();
        }
        let mut bytes = serde_json::to_vec(&command).unwrap();
        bytes.push(0);
        self.to
            .write_all(&bytes)
            .map_err(|e| format!("{method}: {e}{}", self.said()))?;
        loop {
            let message = self.receive(method, deadline)?;
            if message["id"] == self.next {
                if let Some(error) = message.get("error") {
                    return Err(format!("{method}: {error}"));
                }
                return Ok(message["result"].clone());
            }
            event(&message);
        }
    }

    fn receive(&mut self, waiting_for: &str, deadline: Instant) -> Result<Value, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.from.recv_timeout(left).map_err(|e| {
            format!(
                "no answer to {waiting_for} ({e}) within {BROWSER_TIMEOUT:?}{}",
                self.said()
            )
        })
    }

    /// What the browser wrote to its standard error.
    fn said(&self) -> String {
        format!(
            "; stderr:\n{}",
            std::fs::read_to_string(&self.stderr).unwrap_or_default()
        )
    }

    /// Opens `page` in a new tab, waits for its load event, and returns its DOM as
    /// `--dump-dom` prints it (the document element's markup).
    fn dump_dom(&mut self, page: &Path) -> Result<String, String> {
        let deadline = Instant::now() + BROWSER_TIMEOUT;
        let none = |_: &Value| {};
        let target = self.call(
            None,
            "Target.createTarget",
            serde_json::json!({"url": "about:blank"}),
            none,
            deadline,
        )?["targetId"]
            .clone();
        let session = self.call(
            None,
            "Target.attachToTarget",
            serde_json::json!({"targetId": target, "flatten": true}),
            none,
            deadline,
        )?["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let s = Some(session.as_str());
        let loaded = std::cell::Cell::new(false);
        let saw = |m: &Value| {
            if m["method"] == "Page.loadEventFired" && m["sessionId"] == session.as_str() {
                loaded.set(true);
            }
        };
        self.call(s, "Page.enable", serde_json::json!({}), saw, deadline)?;
        let url = format!("file://{}", page.display());
        let navigated = self.call(
            s,
            "Page.navigate",
            serde_json::json!({"url": url}),
            saw,
            deadline,
        )?;
        if let Some(error) = navigated.get("errorText") {
            return Err(format!("{url}: {error}"));
        }
        while !loaded.get() {
            let message = self.receive("the page's load event", deadline)?;
            saw(&message);
        }
        let dom = self.call(
            s,
            "Runtime.evaluate",
            serde_json::json!({
                "expression": "document.documentElement.outerHTML",
                "returnByValue": true
            }),
            none,
            deadline,
        )?["result"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.call(
            None,
            "Target.closeTarget",
            serde_json::json!({"targetId": target}),
            none,
            deadline,
        )?;
        if dom.is_empty() {
            return Err(format!("{url}: an empty DOM"));
        }
        Ok(dom)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the page, checks it statically, then in the browser; returns the rendered DOM (`None`
/// without a browser).
fn render(name: &str, profile: &Profile, baseline: Option<&Profile>) -> Option<String> {
    let html = html_report(profile, baseline);
    check_static(&html);
    let dir = scratch(name);
    let page = dir.join("report.html");
    std::fs::write(&page, &html).unwrap();
    let dom = dump_dom(&page)?;
    let body = dom
        .find("<body")
        .map(|i| &dom[i..i + dom[i..].find('>').unwrap_or(0)])
        .unwrap_or_else(|| panic!("no <body> in the DOM of {}", page.display()));
    assert!(
        !body.contains("data-errors"),
        "script errors in {}: {body}",
        page.display()
    );
    assert!(
        body.contains("data-rendered=\"ok\""),
        "the page did not finish drawing ({body}): {}",
        page.display()
    );
    assert!(
        dom.contains("<div id=\"errors\" hidden=\"\">"),
        "errors shown"
    );
    let _ = std::fs::remove_dir_all(&dir);
    Some(dom)
}

/// Table rows drawn for events.
fn event_rows(dom: &str) -> usize {
    dom.matches("<tr class=\"row").count()
}

#[test]
fn real_profile() {
    let profile = fixture("before.json");
    let Some(dom) = render("real", &profile, None) else {
        return;
    };
    assert_eq!(event_rows(&dom), profile.events.len());
    for section in ["overview", "advice", "breakdown", "timeline", "events"] {
        assert!(dom.contains(&format!("id=\"{section}\"")), "no {section}");
    }
    assert!(!dom.contains("id=\"diff\""));
    // What to do about it: one item per finding of `prof advise`, its id and evidence shown.
    let advice = profiler_analysis::report::build(&profile, &Default::default()).advice;
    let card = &dom[dom.find("id=\"advice\"").unwrap()..];
    let card = &card[..card.find("</section>").unwrap()];
    assert_eq!(card.matches("<li").count(), advice.len(), "{card}");
    for f in &advice {
        assert!(
            card.contains(&format!("{}: ", f.id)),
            "{} not in {card}",
            f.id
        );
    }
    // The step-time breakdown: a bar per category, `other` last, and where to annotate next.
    assert!(
        dom.contains("id=\"step-breakdown\""),
        "no step-time breakdown"
    );
    assert!(dom.matches("class=\"cat\"").count() >= 2, "no category bar");
    assert!(dom.contains("class=\"gap\""), "no uncovered stretch listed");
    // The stretches no probe covers: those that stand out of their scatter under "where to put
    // the next probe", the others apart, each with its scatter as prof report writes it
    // (`±18.1µs ?`).
    let report = profiler_analysis::report::build(&profile, &Default::default());
    let gaps = &report.breakdown.as_ref().unwrap().gaps;
    let list = |class: &str| -> &str {
        let open = format!("<ul class=\"{class}\">");
        let Some(at) = dom.find(&open) else {
            return "";
        };
        &dom[at..at + dom[at..].find("</ul>").unwrap()]
    };
    let (sure, unsure) = (list("gaps"), list("gaps noise"));
    let reliable = gaps.iter().filter(|g| g.reliable).count();
    assert!(reliable > 0 && reliable < gaps.len(), "{gaps:?}");
    assert_eq!(sure.matches("<li").count(), reliable, "{sure}");
    assert_eq!(
        unsure.matches("<li").count(),
        gaps.len() - reliable,
        "{unsure}"
    );
    for g in gaps {
        let shown = if g.reliable { sure } else { unsure };
        assert!(
            shown.contains(&g.scatter()),
            "{} not in {shown}",
            g.scatter()
        );
    }
    // One bar per event in the timeline, one sparkline per row.
    assert_eq!(dom.matches("class=\"ev").count(), profile.events.len());
    // The flame graph: one frame per event with time, `other` and the root, all drawn with a
    // width on screen inside its frame, its own script having run.
    let (frames, drawn) = flame_frames(&dom);
    assert_eq!(frames, drawn);
    assert!(frames >= 10, "{frames} frames");
}

/// The flame graph's `data-frames` and `data-drawn`, set once its frame has loaded.
fn flame_frames(dom: &str) -> (usize, usize) {
    let at = dom.find("id=\"flame\"").expect("no flame graph");
    let tag = &dom[dom[..at].rfind('<').unwrap()..at + dom[at..].find('>').unwrap()];
    let attr = |name: &str| -> usize {
        let start = tag
            .find(&format!("{name}=\""))
            .unwrap_or_else(|| panic!("no {name} on the flame card: {tag}"))
            + name.len()
            + 2;
        tag[start..start + tag[start..].find('"').unwrap()]
            .parse()
            .unwrap()
    };
    (attr("data-frames"), attr("data-drawn"))
}

#[test]
fn compared_with_a_baseline() {
    let before = fixture("before.json");
    let after = fixture("after.json");
    let Some(dom) = render("diff", &after, Some(&before)) else {
        return;
    };
    assert!(dom.contains("id=\"diff\""));
    assert!(dom.contains("class=\"verdict"));
    assert_eq!(event_rows(&dom), after.events.len());
    let (frames, drawn) = flame_frames(&dom);
    assert!(
        frames >= 10 && frames == drawn,
        "{frames} frames, {drawn} drawn"
    );
}

/// One event that was never measured, no layer or phase, no completed iteration.
#[test]
fn edge_case_profile() {
    let mut profile = fixture("before.json");
    profile.events.truncate(1);
    let e = &mut profile.events[0];
    e.samples_ns.clear();
    e.offsets_ns.clear();
    e.sample_iters.clear();
    e.stats = Stats::default();
    e.layer = None;
    e.phase = None;
    e.parent = None;
    profile.iterations.count = 0;
    profile.iterations.wall_ns.clear();
    profile.complete = false;
    let Some(dom) = render("edge", &profile, None) else {
        return;
    };
    assert_eq!(event_rows(&dom), 1);
    // Compared with a real profile: 24 events only in the baseline, one with no sample.
    let before = fixture("before.json");
    render("edge-diff", &profile, Some(&before));
}

/// The page's durations are `prof report`'s: an exact tie rounds to the even digit as Rust
/// does (12250 ns reads 12.2µs in both; the page said 12.3µs), and an event without samples
/// shows `–` for its total and self time (the page said 0ns where the report says `-`).
#[test]
fn durations_read_as_in_prof_report() {
    let mut profile = fixture("before.json");
    profile.events.truncate(2);
    let tied = &mut profile.events[0];
    let n = tied.samples_ns.len();
    tied.samples_ns = vec![12_250; n];
    tied.stats = Stats::of(&tied.samples_ns);
    let empty = &mut profile.events[1];
    empty.name = "sampleless".to_owned();
    empty.samples_ns.clear();
    empty.offsets_ns.clear();
    empty.sample_iters.clear();
    empty.stats = Stats::default();
    empty.parent = None;
    let Some(dom) = render("durations", &profile, None) else {
        return;
    };
    assert!(
        dom.contains(">12.2µs<") && !dom.contains(">12.3µs<"),
        "{dom}"
    );
    // Its rows (the events table, and the table for a browser without scripts).
    let rows: Vec<&str> = dom
        .split("<tr")
        .filter(|r| r.contains(">sampleless<"))
        .map(|r| &r[..r.find("</tr>").unwrap_or(r.len())])
        .collect();
    assert_eq!(rows.len(), 2, "{dom}");
    for row in rows {
        assert!(!row.contains(">0ns<"), "{row}");
    }
}

/// Names, layers and the program name cannot inject markup or end the data block.
#[test]
fn hostile_names_stay_text() {
    let evil = "</script><script>document.body.dataset.pwned=1</script><b>&amp;\"'";
    let mut profile = fixture("after.json");
    profile.run.program = evil.to_owned();
    profile.run.filter = evil.to_owned();
    profile.events[0].name = evil.to_owned();
    profile.events[1].layer = Some(evil.to_owned());
    profile.events[2].phase = Some(evil.to_owned());
    profile.events[3].id = format!("only::after::{evil}");
    let before = fixture("before.json");
    let html = html_report(&profile, Some(&before));
    assert!(!html.contains(evil));
    let Some(dom) = render("hostile", &profile, Some(&before)) else {
        return;
    };
    assert!(!dom.contains("data-pwned"), "a name ran as a script");
    assert!(dom.contains("&lt;/script&gt;&lt;script&gt;document.body.dataset"));
}

/// A profile of 25 events with 50 samples each makes a page well under 300 KB.
#[test]
fn page_size() {
    let mut profile = fixture("before.json");
    for e in &mut profile.events {
        let n = e.samples_ns.len().max(1);
        e.samples_ns = (0..50)
            .map(|i| e.samples_ns.get(i % n).copied().unwrap_or(1000) + i as u64)
            .collect();
        e.offsets_ns = (0..50)
            .map(|i| e.offsets_ns.get(i % n).copied().unwrap_or(0))
            .collect();
        e.sample_iters = (0..50).map(|i| 3 + e.order * 50 + i).collect();
        e.stats = Stats::of(&e.samples_ns);
    }
    profile.iterations.wall_ns = (0..1260)
        .map(|i| 1_200_000 + (i * 7919) % 100_000)
        .collect();
    profile.iterations.count = 1260;
    let html = html_report(&profile, Some(&fixture("after.json")));
    assert!(html.len() < 300_000, "{} bytes", html.len());
    check_static(&html);
}

/// A continuous-mode profile (`tests/data/cli/continuous.json`, a real dlrm run with 10 windows
/// kept; see `tests/continuous.rs`) draws its windows: one line per event and one for the
/// iteration on the time-series chart, one table row each, and the drifted event, made by
/// slowing `bottom_backward` by 25% in the last 3 windows, highlighted and listed.
#[test]
fn continuous_profile_draws_its_windows() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cli/continuous.json");
    let steady = load_profile(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut slowed = steady.clone();
    let order = slowed
        .events
        .iter()
        .find(|e| e.name == "bottom_backward")
        .unwrap()
        .order;
    let n = slowed.windows.len();
    for w in &mut slowed.windows[n - 3..] {
        for e in w.events.iter_mut().filter(|e| e.order == order) {
            e.samples_ns = e.samples_ns.iter().map(|&s| s * 5 / 4).collect();
            e.stats = Stats::of(&e.samples_ns);
        }
    }
    for (name, profile, drifted) in [("steady", &steady, 0), ("slowed", &slowed, 1)] {
        let Some(dom) = render(name, profile, None) else {
            return;
        };
        assert!(dom.contains("id=\"windows\""), "{name}: no windows section");
        let lines = profile.events.len() + 1;
        assert_eq!(dom.matches("<g class=\"series").count(), lines, "{name}");
        assert_eq!(
            dom.matches("<g class=\"series drifted\"").count(),
            drifted,
            "{name}"
        );
        assert!(dom.matches("<polyline").count() >= lines, "{name}");
        assert_eq!(dom.matches("<tr class=\"wrow").count(), lines, "{name}");
        assert_eq!(
            dom.matches("<tr class=\"wrow drifted\"").count(),
            drifted,
            "{name}"
        );
        assert_eq!(dom.contains(">Drifted — 1<"), drifted == 1, "{name}");
        assert_eq!(dom.contains("\">No event drifted"), drifted == 0, "{name}");
        // A file without baseline windows: the recent past only, no gap drawn.
        assert!(!dom.contains("class=\"span baseline\""), "{name}");
        assert!(!dom.contains("class=\"wgap\""), "{name}");
        assert_eq!(
            dom.contains("slower in the recent past"),
            drifted == 1,
            "{name}"
        );
    }
}

/// A real run whose layer slowed long before every recent window kept
/// (`tests/data/cli/continuous-slow.json`, see `tests/continuous.rs`): the baseline windows,
/// the earlier and the recent ones are shaded, the windows dropped after the baseline marked,
/// and the one event drifted since the start listed and highlighted as such.
#[test]
fn continuous_profile_draws_the_drift_since_the_start() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cli/continuous-slow.json");
    let profile = load_profile(&path).unwrap_or_else(|e| panic!("{e}"));
    let Some(dom) = render("since-start", &profile, None) else {
        return;
    };
    let lines = profile.events.len() + 1;
    assert_eq!(dom.matches("<g class=\"series").count(), lines);
    assert_eq!(dom.matches("<g class=\"series drifted\"").count(), 1);
    // The iteration, which holds bottom_backward, slowed since the start too.
    assert_eq!(
        dom.matches("<g class=\"series drifted iteration\"").count(),
        1
    );
    assert_eq!(dom.matches("<tr class=\"wrow drifted\"").count(), 2);
    assert!(dom.contains(">Drifted — 1<"));
    for span in ["baseline", "earlier", "recent"] {
        assert_eq!(
            dom.matches(&format!("class=\"span {span}\"")).count(),
            1,
            "{span}"
        );
    }
    // The dashed gap on the chart and in each of the table's sparklines.
    assert_eq!(dom.matches("class=\"wgap\"").count(), 1 + lines);
    assert!(dom.contains("slower since the start ("), "no drifted chip");
    assert!(
        dom.contains(">slower since the start<"),
        "no verdict in the table"
    );
    assert!(dom.contains("since the start: against the baseline windows 0–2"));
}

/// With memory figures, the page draws a "Memory per layer" card, one bar per layer; without,
/// there is none (the `real_profile` page). Layers named as an object's own properties
/// (`__proto__`, `constructor`) are layers like the others: the page's tables were plain
/// objects, and such a layer had no row (and no colour).
#[test]
fn memory_per_layer_is_drawn() {
    let mut profile = fixture("before.json");
    let names = ["__proto__", "constructor", "toString"];
    let mut renamed = 0;
    for e in profile.events.iter_mut().filter(|e| e.layer.is_some()) {
        if renamed < names.len() {
            e.layer = Some(names[renamed].to_owned());
            renamed += 1;
        }
    }
    for (k, e) in profile.events.iter_mut().enumerate() {
        let n = e.samples_ns.len();
        e.memory = Some(profiler_format::Memory {
            alloc_bytes: vec![1024 * (k as u64 + 1); n],
            freed_bytes: vec![512; n],
            allocs: vec![2; n],
            peak_bytes: vec![2048; n],
        });
    }
    let layers: std::collections::BTreeSet<String> = profile
        .events
        .iter()
        .filter_map(|e| e.layer.clone())
        .collect();
    let Some(dom) = render("memory", &profile, None) else {
        return;
    };
    assert!(dom.contains("id=\"memory\""), "no memory card");
    let rows = dom.matches("class=\"memrow\"").count();
    // One per layer, and one for the events without a layer of their own or above them, if any.
    assert!(
        rows >= layers.len() && rows <= layers.len() + 1,
        "{rows} rows for {layers:?}"
    );
    assert!(dom.contains("allocated per iteration"));
    for name in &names[..renamed] {
        assert!(dom.contains(&format!(">{name}<")), "no row of layer {name}");
    }
    let plain = fixture("before.json");
    let Some(dom) = render("no-memory", &plain, None) else {
        return;
    };
    assert!(!dom.contains("id=\"memory\""));
}

/// With work keys, the events table gains the achieved rates' columns (FLOP/s and B/s with
/// their 95% interval as the cell's title, FLOP/B, bound, MFU), the texts `prof report`
/// writes, an MFU over 100% flagged, and the report's line on the work (the peak and its
/// source) below the table; without, none of them (the `real_profile` page).
#[test]
fn rates_are_drawn_in_the_events_table() {
    let mut profile = fixture("before.json");
    // Each event: 1e4 FLOPs and 2e3 bytes a run, but the first: 1e12 FLOPs a run, far over
    // any peak of 1e12 FLOP/s.
    for (k, e) in profile.events.iter_mut().enumerate() {
        let n = e.samples_ns.len();
        let flops = if k == 0 { 1_000_000_000_000 } else { 10_000 };
        e.work = Some(profiler_format::SampleWork {
            flops: Some(vec![flops; n]),
            bytes: Some(vec![2_000; n]),
        });
        // The second event's runs alternate between two input shapes.
        if k == 1 {
            e.shapes = Some(profiler_format::Shapes {
                values: vec!["32x512, 512x64".to_owned(), "16x512, 512x64".to_owned()],
                sample_shapes: (0..n).map(|i| Some((i % 2) as u32)).collect(),
                others: 0,
            });
        }
    }
    profile.run.peak = Some(profiler_format::peak::Peak {
        schema: profiler_format::peak::PEAK_SCHEMA.to_owned(),
        flops: Some(1e12),
        bytes: Some(1e11),
        source: "given".to_owned(),
        detail: "PROF_PEAK_FLOPS=1e12".to_owned(),
        host: String::new(),
    });
    let Some(dom) = render("work", &profile, None) else {
        return;
    };
    for header in ["FLOP/s", "B/s", "FLOP/B", "Bound", "MFU"] {
        assert!(
            dom.contains(&format!(">{header}<span class=\"arrow\">")),
            "no {header} column"
        );
    }
    assert_eq!(
        dom.matches("title=\"95% interval: ").count(),
        2 * profile.events.len()
    );
    assert_eq!(
        dom.matches("class=\" overpeak\"").count(),
        1,
        "one MFU flagged"
    );
    assert!(dom.contains("&gt;100%! check the peak or the flops key"));
    assert!(
        dom.contains("(given: PROF_PEAK_FLOPS=1e12)"),
        "no work line"
    );
    // The shape key's table: one row per shape, its texts as `prof report` prints them.
    assert!(dom.contains("id=\"shapes\""), "no shape table");
    for shape in ["32x512, 512x64", "16x512, 512x64"] {
        assert!(
            dom.contains(&format!("<td class=\"l\">{shape}</td>")),
            "no row of {shape}"
        );
    }
    let plain = fixture("before.json");
    let Some(dom) = render("no-work", &plain, None) else {
        return;
    };
    assert!(!dom.contains(">MFU<span class=\"arrow\">"));
    assert!(!dom.contains("id=\"shapes\""));
    assert!(!dom.contains("title=\"95% interval: "));
}

/// The "Average iteration" is `prof trace`'s drawing of it (`trace::average_iteration`): each
/// event where the trace puts it, the step, and the `other` stretches, which are the
/// breakdown's gaps. On a recorded noisy `sample`-mode run (the dlrm example's, cv 29%), where
/// the events drawn at their raw median offsets left a 0.99 ms stretch that the breakdown puts
/// at 61 µs. In the browser: one grey `other` rectangle per stretch, one bar per event.
#[test]
fn timeline_draws_the_average_iteration_of_prof_trace() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/trace/dlrm-sample.json");
    let profile = load_profile(&path).unwrap();
    let html = html_report(&profile, None);
    let data: serde_json::Value = serde_json::from_str(data_block(&html)).unwrap();
    let report = profiler_analysis::report::build(&profile, &Default::default());
    let average =
        profiler_analysis::trace::average_iteration(&profile, report.breakdown.as_ref()).unwrap();
    assert_eq!(data["average"]["step_ns"], average.step_ns);
    assert_eq!(data["average"]["other"], serde_json::json!(average.other));
    let rows = data["report"]["events"].as_array().unwrap();
    assert_eq!(rows.len(), profile.events.len());
    for row in rows {
        let i = (profile.events.iter())
            .position(|e| row["id"] == e.id.as_str() && row["occurrence"] == e.occurrence)
            .unwrap();
        assert_eq!(
            row["drawn_ns"],
            serde_json::json!(average.spans[i]),
            "{row}"
        );
    }
    // The largest stretch is the breakdown's largest gap, to the nanosecond.
    let gap = &data["report"]["breakdown"]["gaps"][0];
    let (start, len) = (
        gap["start_ns"].as_f64().unwrap(),
        gap["len_ns"].as_f64().unwrap(),
    );
    let largest = average.other.iter().max_by_key(|[a, b]| b - a).unwrap();
    assert!(
        (largest[0] as f64 - start).abs() <= 1.0
            && ((largest[1] - largest[0]) as f64 - len).abs() <= 2.0,
        "{largest:?} against the gap {gap}"
    );
    let Some(dom) = render("average", &profile, None) else {
        return;
    };
    let at = dom.find("id=\"timeline\"").expect("no timeline");
    let timeline = &dom[at..at + dom[at..].find("</section>").unwrap()];
    assert_eq!(
        timeline.matches("class=\"other\"").count(),
        average.other.len()
    );
    assert_eq!(timeline.matches("class=\"ev").count(), profile.events.len());
}
