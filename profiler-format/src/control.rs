//! The control file of `continuous` mode's traces on demand (`PROF_CONTROL`): one line,
//! `trace [iterations=N] [at=ITERATION] [id=TEXT]`, written by `prof trigger --control` (or by
//! hand) and read by the running job. Blank lines and lines starting with `#` are ignored.
//!
//! The job reads the file with [`read`]: only a regular file (or a link to one), opened without
//! blocking, and at most [`MAX_CONTROL_BYTES`] of it, so that a FIFO or a device put in its
//! place never blocks nor fills the job's memory. A request's count follows one rule on every
//! path (this file, `prof trigger`, the signal): [`check_iterations`] says what may be asked,
//! and [`iterations_taken`] what the job takes of it.

use std::io::Read;
use std::path::Path;
use std::time::SystemTime;

/// The most a control file may hold, in bytes (4 KiB): a request is one line (`prof trigger`
/// writes under 100 bytes). A longer file is not read past this, and is not a request.
pub const MAX_CONTROL_BYTES: usize = 4096;

/// The most iterations a request may ask for (`u32::MAX`); a job takes at most its
/// `PROF_REPEAT` of them ([`iterations_taken`]).
pub const MAX_ITERATIONS: u32 = u32::MAX;

/// Checks a count of iterations asked for, as the job (the control file's `iterations=`) and
/// `prof trigger --iterations` both do: a whole number from 1 to [`MAX_ITERATIONS`]. The error
/// says the rule.
pub fn check_iterations(text: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| {
            format!(
                "iterations must be a whole number from 1 to {MAX_ITERATIONS} (the job takes \
                 at most its PROF_REPEAT)"
            )
        })
}

/// The iterations a job whose `PROF_REPEAT` is `repeat` traces for a request of `asked` (`None`:
/// `repeat`): at most `repeat`, each event's room for samples. The same by signal and through
/// the control file.
pub fn iterations_taken(asked: Option<u32>, repeat: u32) -> u32 {
    asked.map_or(repeat, |n| n.min(repeat))
}

/// A control file as [`read`] found it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contents {
    /// Its text (empty when there is no file).
    pub text: String,
    /// Its modification time, from the descriptor the text was read through (`None`: no file).
    pub modified: Option<SystemTime>,
}

/// Reads the control file at `path`, as a running job does each time it looks: never blocking
/// and never reading more than [`MAX_CONTROL_BYTES`] (+1, to tell that there is more).
///
/// The file is opened without blocking (`O_NONBLOCK`: a FIFO does not wait for a writer), and
/// checked on the open descriptor (`fstat`, so what is read is what was checked) to be a
/// regular file. A missing file reads as empty (no request). The error, one line without the
/// path, is the same each time for the same problem (callers report each problem once):
/// `it is a named pipe (FIFO), not a regular file`, `more than 4 KiB ...`, `not UTF-8 ...`, or
/// the system's error.
pub fn read(path: &Path) -> Result<Contents, String> {
    let (file, meta) = match crate::read::open_unblocked(path) {
        Ok(opened) => opened,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Contents::default()),
        Err(e) => return Err(format!("cannot be opened: {e}")),
    };
    if !meta.is_file() {
        return Err(format!(
            "it is {}, not a regular file",
            crate::read::file_kind(&meta)
        ));
    }
    let bytes = read_at_most(file, MAX_CONTROL_BYTES)
        .map_err(|e| format!("cannot be read: {e}"))?
        .ok_or_else(|| {
            format!(
                "more than {} KiB, not a control file (a request is one line, `trace \
                 iterations=N`)",
                MAX_CONTROL_BYTES / 1024
            )
        })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (byte {} is not), not a request",
            e.utf8_error().valid_up_to() + 1
        )
    })?;
    Ok(Contents {
        text,
        modified: meta.modified().ok(),
    })
}

/// At most `cap` bytes of `reader`, to its end; `None` when it holds more (then `cap + 1`
/// bytes were read, and no more).
fn read_at_most(reader: impl Read, cap: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    reader.take(cap as u64 + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() <= cap).then_some(bytes))
}

/// A request for a trace of a running job's next iterations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// How many iterations (`None`: the job's `PROF_REPEAT`).
    pub iterations: Option<u32>,
    /// The iteration to start at, the same on every rank (`None`: rank 0 picks one a little
    /// ahead and rewrites the file with it).
    pub at: Option<u32>,
    /// A text that tells one request from another (`prof trigger` writes a fresh one).
    pub id: Option<String>,
}

impl Request {
    /// The request as the control file holds it, ending with a newline.
    pub fn line(&self) -> String {
        let mut line = String::from("trace");
        if let Some(n) = self.iterations {
            line.push_str(&format!(" iterations={n}"));
        }
        if let Some(at) = self.at {
            line.push_str(&format!(" at={at}"));
        }
        if let Some(id) = &self.id {
            line.push_str(&format!(" id={id}"));
        }
        line.push('\n');
        line
    }
}

/// The request a control file holds (`None` when it holds none), or what is wrong with it.
pub fn parse(text: &str) -> Result<Option<Request>, String> {
    let mut found = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if found.is_some() {
            return Err(format!(
                "line {}: one request per file (write the file anew for the next)",
                n + 1
            ));
        }
        let mut words = line.split_whitespace();
        if words.next() != Some("trace") {
            return Err(format!(
                "line {}: expected `trace [iterations=N] [at=ITERATION] [id=TEXT]`, found `{}`",
                n + 1,
                crate::write::shorten(line, 60)
            ));
        }
        let mut request = Request::default();
        for word in words {
            let bad = |what: &str| {
                format!(
                    "line {}: `{}`: {what}",
                    n + 1,
                    crate::write::shorten(word, 60)
                )
            };
            match word.split_once('=') {
                Some(("iterations", v)) => {
                    request.iterations = Some(check_iterations(v).map_err(|e| bad(&e))?);
                }
                Some(("at", v)) => {
                    let at = v
                        .parse::<u32>()
                        .map_err(|_| bad("at must be an iteration number"))?;
                    request.at = Some(at);
                }
                Some(("id", v)) if !v.is_empty() && is_id(v) => request.id = Some(v.to_owned()),
                Some(("id", _)) => return Err(bad("id must be letters, digits, `-`, `_` or `.`")),
                _ => return Err(bad("expected iterations=N, at=ITERATION or id=TEXT")),
            }
        }
        found = Some(request);
    }
    Ok(found)
}

/// Whether `id` is a request id: letters, digits, `-`, `_`, `.`.
pub fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse() {
        let r = parse("trace iterations=20 at=5120 id=x1\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            Request {
                iterations: Some(20),
                at: Some(5120),
                id: Some("x1".into())
            }
        );
        assert_eq!(parse(&r.line()).unwrap(), Some(r));
        let r = parse("# asked by hand\n\ntrace\n").unwrap().unwrap();
        assert_eq!(r, Request::default());
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(parse("  \n# nothing\n").unwrap(), None);
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        let e = parse("tracee").unwrap_err();
        assert!(e.contains("line 1") && e.contains("expected `trace"), "{e}");
        let e = parse("trace iterations=0").unwrap_err();
        assert!(e.contains("iterations must be"), "{e}");
        let e = parse("trace at=soon").unwrap_err();
        assert!(e.contains("at must be"), "{e}");
        let e = parse("trace n=3").unwrap_err();
        assert!(e.contains("expected iterations="), "{e}");
        let e = parse("trace id=a/b").unwrap_err();
        assert!(e.contains("id must be"), "{e}");
        let e = parse("trace\ntrace").unwrap_err();
        assert!(e.contains("line 2") && e.contains("one request"), "{e}");
        let e = parse("trace iterations=4294967296").unwrap_err();
        assert!(e.contains("from 1 to 4294967295"), "{e}");
    }

    /// The most `prof trigger` writes is what the job reads: one rule (the job then takes at
    /// most its PROF_REPEAT).
    #[test]
    fn any_count_prof_trigger_writes_is_read_back() {
        for n in [1, 7, u32::MAX - 1, u32::MAX] {
            let r = Request {
                iterations: Some(n),
                at: Some(3),
                id: Some("a".into()),
            };
            assert_eq!(parse(&r.line()).unwrap(), Some(r));
            assert_eq!(check_iterations(&n.to_string()), Ok(n));
        }
        assert!(check_iterations("0").is_err());
        assert!(check_iterations("-1").is_err());
        assert_eq!(iterations_taken(Some(u32::MAX), 6), 6);
        assert_eq!(iterations_taken(Some(4), 6), 4);
        assert_eq!(iterations_taken(None, 6), 6);
    }

    /// A source without end (as `/dev/zero`) is read no further than the cap and one byte.
    #[test]
    fn the_read_stops_one_byte_past_the_cap() {
        struct Counted<R>(R, usize);
        impl<R: Read> Read for Counted<R> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.read(buf)?;
                self.1 += n;
                Ok(n)
            }
        }
        let mut endless = Counted(std::io::repeat(0), 0);
        assert_eq!(read_at_most(&mut endless, MAX_CONTROL_BYTES).unwrap(), None);
        assert_eq!(endless.1, MAX_CONTROL_BYTES + 1);
        let exact = vec![b'#'; MAX_CONTROL_BYTES];
        assert_eq!(
            read_at_most(&exact[..], MAX_CONTROL_BYTES).unwrap(),
            Some(exact.clone())
        );
    }

    #[cfg(unix)]
    #[test]
    fn only_a_regular_file_is_read() {
        let dir = std::env::temp_dir().join(format!("control-read-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // Missing: no request.
        let path = dir.join("ctl");
        assert_eq!(read(&path).unwrap(), Contents::default());
        std::fs::write(&path, "trace iterations=2\n").unwrap();
        let c = read(&path).unwrap();
        assert_eq!(c.text, "trace iterations=2\n");
        assert!(c.modified.is_some());
        // A FIFO: opened without waiting for a writer, and refused.
        let fifo = dir.join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = read(&fifo).unwrap_err();
        assert_eq!(e, "it is a named pipe (FIFO), not a regular file");
        // A link to an endless device: refused before anything is read.
        let zero = dir.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read(&zero).unwrap_err();
        assert_eq!(e, "it is a character device, not a regular file");
        assert!(read(&dir).unwrap_err().contains("a directory"));
        // A file far bigger than any request (sparse: nothing is written): at most the cap.
        let big = dir.join("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let e = read(&big).unwrap_err();
        assert!(e.starts_with("more than 4 KiB"), "{e}");
        // Not UTF-8: said, never taken for an empty file.
        std::fs::write(&path, b"trace id=\xff\n").unwrap();
        let e = read(&path).unwrap_err();
        assert!(e.starts_with("not UTF-8 text (byte 10 is not)"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
