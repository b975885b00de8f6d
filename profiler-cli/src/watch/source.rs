//! Reading the followed files: each poll looks at a file's metadata (modification time, size,
//! inode) and reads it again only when they changed. A continuous-mode run replaces its file
//! by a rename, so the path is opened anew each time; a file that is missing, half-written or
//! malformed gives an [`Update::Failed`] with `prof`'s message, never a panic.

use std::path::PathBuf;
use std::time::SystemTime;

use profiler_analysis::load_profile;

use super::model::{Snapshot, Update};

/// What polling compares: a rename gives a new inode, a rewrite a new time or size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Stamp {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode,
        }
    }
}

/// One followed file.
#[derive(Debug)]
pub struct Source {
    path: PathBuf,
    /// The metadata at the last read (good or not); `None` before the first, or while the
    /// file is missing.
    seen: Option<Stamp>,
    /// The last poll found the file missing (said once, until it appears).
    missing: bool,
}

impl Source {
    /// A file to follow.
    pub fn new(path: impl Into<PathBuf>) -> Source {
        Source {
            path: path.into(),
            seen: None,
            missing: false,
        }
    }

    /// Reads the file if it changed since the last poll: `None` when it did not, else the
    /// snapshot of what it holds (drift judged against `drift_threshold`) or why it could not
    /// be read.
    pub fn poll(&mut self, drift_threshold: f64) -> Option<Update> {
        let stamp = match std::fs::metadata(&self.path) {
            Ok(meta) => Stamp::of(&meta),
            Err(_) if self.missing => return None,
            Err(_) => {
                self.seen = None;
                // load_profile words it as every prof command does; a file that appeared
                // meanwhile is read at the next poll.
                let error = load_profile(&self.path).err()?;
                self.missing = true;
                return Some(Update::Failed {
                    modified: None,
                    message: message(&error),
                });
            }
        };
        self.missing = false;
        if self.seen == Some(stamp) {
            return None;
        }
        // The stamp is taken before the read: a file replaced in between is read again at
        // the next poll, never missed.
        self.seen = Some(stamp);
        Some(match load_profile(&self.path) {
            Ok(profile) => Update::Loaded {
                modified: stamp.modified,
                snapshot: Box::new(Snapshot::new(&profile, drift_threshold)),
            },
            Err(e) => Update::Failed {
                modified: stamp.modified,
                message: message(&e),
            },
        })
    }
}

/// The first line of a load error, for the status line (the help lines that follow it are for
/// a terminal's scrollback, not one line).
fn message(error: &profiler_analysis::LoadError) -> String {
    error.to_string().lines().next().unwrap_or("").to_owned()
}
