//! The end of the pipeline: `prof.json` written atomically, and the summary on stderr.

use std::path::Path;

use profiler_format::{summary, write_atomic_with, Profile};

/// Encodes `profile` and writes it to `path` atomically, streaming the text into the temporary
/// file rather than holding all of it (a trace-mode profile of millions of samples is hundreds
/// of megabytes); the error says why it could not.
pub fn write_profile(profile: &Profile, path: &Path) -> Result<(), String> {
    write_atomic_with(path, |out| {
        serde_json::to_writer_pretty(&mut *out, profile).map_err(std::io::Error::other)
    })
    .map_err(|e| e.to_string())
}

/// Writes the profile to `path` and the summary to stderr. A failure is reported on stderr
/// with the path and the reason, and the summary says that nothing was written; the program
/// goes on.
pub fn emit(profile: &Profile, path: &Path, print_summary: bool) -> bool {
    let written = match write_profile(profile, path) {
        Ok(()) => true,
        Err(e) => {
            eprintln!(
                "profiler-core: error: cannot write the results to {}: {e} (the program goes on)",
                path.display()
            );
            false
        }
    };
    if print_summary {
        let shown = path.display().to_string();
        eprintln!(
            "{}",
            if written {
                summary::summary(profile, &shown)
            } else {
                summary::summary_unwritten(profile, &shown)
            }
        );
    }
    written
}
