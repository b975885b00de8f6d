//! The control file of `continuous` mode's traces on demand (`PROF_CONTROL`): one line,
//! `trace [iterations=N] [at=ITERATION] [id=TEXT]`, written by `prof trigger --control` (or by
//! hand) and read by the running job. Blank lines and lines starting with `#` are ignored.

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
                    let n = v
                        .parse::<u32>()
                        .ok()
                        .filter(|&k| (1..u32::MAX).contains(&k))
                        .ok_or_else(|| bad("iterations must be a whole number from 1"))?;
                    request.iterations = Some(n);
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
    }
}
