//! Writing a result file atomically: a temporary file beside the target, renamed over it, and
//! never over a directory, a FIFO or a device.

use std::io::Write;
use std::path::{Path, PathBuf};

/// What the file at `path` is, when it is not something a write may replace.
fn special_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a named pipe (FIFO)");
        }
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    (!kind.is_file()).then_some("not a regular file")
}

/// Where [`write_atomic`] puts the file for `path`: `path` itself, or, when `path` is a
/// symbolic link (or a chain of them), the file it points to, so that the link stays a link.
///
/// Fails, with a message that names the path and what it is, when the target exists and is not
/// a regular file (a directory, a FIFO, a device, a socket), and when the path leads to one of
/// this process's open descriptors: `/dev/stdout`, `/dev/stderr`, `/proc/self/fd/N`, or any
/// path to a file the process has open (standard output redirected to a log, say). An atomic
/// write replaces its target by renaming a new file over it, and must never replace those: the
/// log's earlier lines would be gone. A path that ends in `/` names a directory and fails too.
pub fn check_target(path: &Path) -> Result<PathBuf, String> {
    if path.as_os_str().is_empty() {
        return Err("the path is empty".into());
    }
    let text = path.as_os_str().as_encoded_bytes();
    if text.ends_with(b"/") || path.file_name().is_none() {
        return Err(format!(
            "{} names a directory, not a file (add a file name such as prof.json)",
            shorten(&path.display().to_string(), 200)
        ));
    }
    let shown = shorten(&path.display().to_string(), 200);
    // What the path leads to, all links followed (also the kernel's magic links, such as
    // /dev/stdout -> /proc/self/fd/1 -> a pipe).
    if let Ok(meta) = std::fs::metadata(path) {
        if let Some(kind) = special_kind(&meta) {
            return Err(format!(
                "{shown} is {kind}{}; results are written to a new file renamed over the old \
                 one, which must not replace {kind}",
                if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                    " (through a symbolic link)"
                } else {
                    ""
                }
            ));
        }
        if let Some(fd) = open_descriptor_of(&meta) {
            return Err(format!(
                "{shown} is the file this process has open as {}; results are written to a new \
                 file renamed over the old one, which would replace it and lose what was \
                 written there (write the results to a file of their own)",
                describe_fd(fd)
            ));
        }
    }
    let target = resolve_links(path, &shown)?;
    pin(path, &target, &shown)?;
    match std::fs::symlink_metadata(&target) {
        Ok(meta) => match special_kind(&meta) {
            None => Ok(target),
            Some(kind) => Err(format!(
                "{shown} links to {}, which is {kind}; results are written to a new file \
                 renamed over the old one, which must not replace {kind}",
                shorten(&target.display().to_string(), 200)
            )),
        },
        // Nothing there yet: the write creates it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(target),
        Err(e) => Err(format!(
            "cannot inspect {}: {e}",
            shorten(&target.display().to_string(), 200)
        )),
    }
}

/// Where each output path led the first time this process checked it. A path keeps leading
/// there: a link planted (or re-aimed) while a run goes on is not followed, so a user who can
/// write to the output's directory cannot steer a later rewrite into another file.
static PINNED: std::sync::Mutex<Vec<(PathBuf, PathBuf)>> = std::sync::Mutex::new(Vec::new());

/// Records that `path` leads to `target`, or fails when it led elsewhere before.
fn pin(path: &Path, target: &Path, shown: &str) -> Result<(), String> {
    let mut pinned = PINNED.lock().unwrap_or_else(|e| e.into_inner());
    match pinned.iter().find(|(p, _)| p == path) {
        Some((_, first)) if first != target => Err(format!(
            "{shown} now leads to {}, but led to {} when this process first checked it; a link \
             planted or changed while the program runs is not followed (remove it, or point \
             the output at a new path)",
            shorten(&target.display().to_string(), 200),
            shorten(&first.display().to_string(), 200)
        )),
        Some(_) => Ok(()),
        None => {
            pinned.push((path.to_path_buf(), target.to_path_buf()));
            Ok(())
        }
    }
}

/// The end of `path`'s chain of symbolic links (at most 40), without following the last name
/// if it is not a link. A link that lives in a `/proc/.../fd` directory is an open descriptor
/// (of this process or another): refused, since what it leads to is not a file of its own.
fn resolve_links(path: &Path, shown: &str) -> Result<PathBuf, String> {
    let mut target = path.to_path_buf();
    for _ in 0..40 {
        let meta = match std::fs::symlink_metadata(&target) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(target),
            Err(e) => {
                return Err(format!(
                    "cannot inspect {}: {e}",
                    shorten(&target.display().to_string(), 200)
                ))
            }
        };
        if !meta.file_type().is_symlink() {
            return Ok(target);
        }
        if in_descriptor_dir(&target) {
            return Err(format!(
                "{shown} leads through {}, an open file descriptor, not a file of its own; \
                 results are written to a new file renamed over the old one, which must never \
                 replace what a descriptor points to (write the results to a file of their own)",
                shorten(&target.display().to_string(), 200)
            ));
        }
        let link = std::fs::read_link(&target)
            .map_err(|e| format!("cannot read the link {shown}: {e}"))?;
        target = match target.parent() {
            Some(dir) if link.is_relative() => dir.join(link),
            _ => link,
        };
    }
    Err(format!("{shown}: too many levels of symbolic links"))
}

/// Whether the link `path` is an entry of a `/proc/<pid>/fd` (or `/dev/fd`, which leads there)
/// directory: the kernel's magic links to open descriptors.
fn in_descriptor_dir(path: &Path) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut parts = dir.components().map(|c| c.as_os_str().to_string_lossy());
    let _root = parts.next();
    let parts: Vec<_> = parts.collect();
    parts.first().is_some_and(|p| p == "proc") && parts.last().is_some_and(|p| p == "fd")
}

/// The number of a descriptor this process has open for writing on the file `meta` describes,
/// if any. A descriptor open for reading only (a reader of the results in the same process)
/// loses nothing when the file is replaced, and does not count: refusing then would leave the
/// results unwritten for as long as someone reads them.
#[cfg(target_os = "linux")]
fn open_descriptor_of(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    let mut fds: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    fds.sort_unstable();
    fds.into_iter().find(|fd| {
        std::fs::metadata(format!("/proc/self/fd/{fd}"))
            .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
            && may_write(*fd)
    })
}

/// Whether descriptor `fd` may write (`/proc/self/fdinfo`: the access mode in the low bits of
/// `flags`, 0 = `O_RDONLY`). A descriptor closed since it was listed (a reader on another
/// thread done with the file) writes nothing; one whose mode cannot be told otherwise counts
/// as writing.
#[cfg(target_os = "linux")]
fn may_write(fd: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")) {
        Ok(info) => info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|flags| u32::from_str_radix(flags.trim(), 8).ok())
            .is_none_or(|flags| flags & 0o3 != 0),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

/// Elsewhere only the standard descriptors can be asked about portably; the magic paths are
/// still refused by [`in_descriptor_dir`] where they exist.
#[cfg(not(target_os = "linux"))]
fn open_descriptor_of(_meta: &std::fs::Metadata) -> Option<u32> {
    None
}

/// `descriptor 1 (standard output)`, and so on.
fn describe_fd(fd: u32) -> String {
    match fd {
        0 => "descriptor 0 (standard input)".into(),
        1 => "descriptor 1 (standard output)".into(),
        2 => "descriptor 2 (standard error)".into(),
        n => format!("descriptor {n}"),
    }
}

/// `text` itself when it has at most `max` characters, else its start and end around `…` and
/// its length: messages never echo a huge value whole.
pub fn shorten(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_owned();
    }
    let head: String = text.chars().take(max / 2).collect();
    let tail: String = text.chars().skip(n - max / 2).collect();
    format!("{head}…{tail} ({n} characters)")
}

/// The longest a temporary file's name may be in bytes, kept under the 255 of common file
/// systems whatever the target's name: `.` + at most 200 bytes of the name + `.` + 12 random
/// characters + `.tmp`.
const MAX_NAME_PART: usize = 200;

/// Creates a new, empty temporary file in the directory of `target` (which [`check_target`]
/// resolved), for a write that will be renamed over `target`.
///
/// The file is created exclusively (`O_CREAT | O_EXCL`: never a file, link or FIFO that was
/// there) under an unpredictable name (`.NAME.XXXXXXXXXXXX.tmp`, 12 random characters, the
/// name shortened so that the whole stays a legal file name), with the mode a plain create
/// would give (`0666` less the umask). Dropping the returned file removes it.
pub fn create_temp(target: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "prof.json".into());
    let mut cut = name.len().min(MAX_NAME_PART);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let prefix = format!(".{}.", &name[..cut]);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp").rand_bytes(12);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir)
}

/// Checks, before any work whose results would be lost, that a write to `target` (which
/// [`check_target`] resolved) can succeed: a file can be created in its directory, and a name
/// as long as the target's is legal there. It creates a new file exclusively under a random
/// name of that length and removes it at once, so nothing that exists is opened or emptied.
pub fn check_writable(target: &Path) -> std::io::Result<()> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let len = target.file_name().map_or(0, |n| n.as_encoded_bytes().len());
    let probe = tempfile::Builder::new()
        .prefix(".")
        .suffix("")
        .rand_bytes(len.saturating_sub(1).max(12))
        .tempfile_in(dir)?;
    probe.close()
}

/// Why an output path cannot take a result ([`check_output_path`]).
#[derive(Debug)]
pub enum OutputPathError {
    /// The path names something that is not a regular file, or cannot be resolved
    /// ([`check_target`]'s reason).
    Target(String),
    /// Its directory does not exist.
    NoDirectory(PathBuf),
    /// No file can be created in its directory ([`check_writable`]'s error).
    NotWritable(PathBuf, std::io::Error),
}

/// Checks, before any work whose results would be lost, that `path` can take a result: it
/// names a regular file or nothing yet ([`check_target`], links followed), its directory exists,
/// and a file can be created there ([`check_writable`]). Returns the resolved target. The one
/// check of an output path, for the profiled program's `PROF_OUT` and `prof`'s `-o`; each
/// caller words the error for its own users.
pub fn check_output_path(path: &Path) -> Result<PathBuf, OutputPathError> {
    let target = check_target(path).map_err(OutputPathError::Target)?;
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(OutputPathError::NoDirectory(dir));
    }
    check_writable(&target).map_err(|e| OutputPathError::NotWritable(dir, e))?;
    Ok(target)
}

/// Writes `bytes` to `path` atomically: a temporary file created exclusively in the same
/// directory (see [`create_temp`]), flushed, then renamed over the target, so a reader never
/// sees half a file and nothing but the target is ever written.
///
/// A symbolic link is followed (the file it points to is replaced, the link stays). A target
/// that is not a regular file (a directory, a FIFO, a device such as `/dev/null`), or that is
/// one of this process's open descriptors (`/dev/stdout`, `/proc/self/fd/N`, a log that
/// standard output goes to), is never replaced: the write fails with
/// [`std::io::ErrorKind::InvalidInput`] (see [`check_target`]). An existing target keeps its
/// permission bits.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |out| out.write_all(bytes))
}

/// The temporary files of the writes under way in this process ([`write_atomic_with`]'s), for
/// [`remove_temporaries_and`].
static LIVE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// A temporary file's path in [`LIVE`] while its write is under way.
struct Live(PathBuf);

impl Live {
    /// Creates the temporary file for `target` ([`create_temp`]) and lists it, under the
    /// list's lock: a [`remove_temporaries_and`] never runs between the two (the file there,
    /// not yet listed, would be left).
    fn create(target: &Path) -> std::io::Result<(tempfile::NamedTempFile, Live)> {
        let mut live = live();
        let tmp = create_temp(target)?;
        live.push(tmp.path().to_owned());
        let listed = Live(tmp.path().to_owned());
        Ok((tmp, listed))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let mut live = live();
        if let Some(i) = live.iter().position(|p| *p == self.0) {
            live.swap_remove(i);
        }
    }
}

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes the temporary files of the writes under way, then calls `end` with the list still
/// held, so that no write renames its file into place or starts another meanwhile: for a
/// program ending of a signal (`prof` on SIGINT, SIGTERM or SIGHUP: `end` ends the process),
/// which then leaves nothing but its finished outputs. `end` gets how many were removed.
pub fn remove_temporaries_and<T>(end: impl FnOnce(usize) -> T) -> T {
    remove_live(|_| true, end)
}

/// [`remove_temporaries_and`] for the temporary files `which` selects.
fn remove_live<T>(which: impl Fn(&Path) -> bool, end: impl FnOnce(usize) -> T) -> T {
    let live = live();
    let removed = live
        .iter()
        .filter(|p| which(p) && std::fs::remove_file(p).is_ok())
        .count();
    let ended = end(removed);
    drop(live);
    ended
}

/// Writes to `path` atomically what `write` writes to the writer it is given (buffered, over
/// the temporary file; `Send`, so that `write` may hand it to a thread of its own): [`write_atomic`] for an output too large to hold in memory, such as the
/// trace of a profile of millions of samples. The target is replaced only when `write` and the
/// flush succeed; on an error, the temporary file is removed and its error returned.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let invalid = |why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
    let target = check_target(path).map_err(invalid)?;
    let (mut tmp, _live) = Live::create(&target)?;
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(&target) {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut out)?;
        out.flush()?;
    }
    tmp.as_file().sync_all()?;
    // The target may have changed while the file was written: check it once more, so that a
    // link or a special file planted meanwhile is not replaced.
    let again = check_target(path).map_err(invalid)?;
    if again != target {
        return Err(invalid(format!(
            "{} changed while the results were written (it now leads to {}); nothing was \
             replaced",
            shorten(&path.display().to_string(), 200),
            shorten(&again.display().to_string(), 200)
        )));
    }
    if !still_ours(&tmp)? {
        // Something else was renamed over the temporary name: leave it (it is not ours to
        // remove) and replace nothing.
        let _ = tmp.keep();
        return Err(invalid(format!(
            "the temporary file for {} was replaced while the results were written; nothing \
             was replaced",
            shorten(&path.display().to_string(), 200)
        )));
    }
    tmp.persist(&target).map(drop).map_err(|e| e.error)
}

/// Whether the temporary file's name still leads to the file this process created.
fn still_ours(tmp: &tempfile::NamedTempFile) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let ours = tmp.as_file().metadata()?;
        Ok(std::fs::symlink_metadata(tmp.path())
            .is_ok_and(|there| there.dev() == ours.dev() && there.ino() == ours.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = tmp;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {

    /// A descriptor closed between its listing and the look at its mode (a reader on another
    /// thread done with the file) writes nothing: the results are not refused for it.
    #[cfg(target_os = "linux")]
    #[test]
    fn only_descriptors_that_may_write_count() {
        use std::os::fd::AsRawFd;
        let dir = std::env::temp_dir().join(format!("prof-may-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        std::fs::write(&path, "{}").unwrap();
        let reader = std::fs::File::open(&path).unwrap();
        let writer = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        assert!(!may_write(reader.as_raw_fd() as u32));
        assert!(may_write(writer.as_raw_fd() as u32));
        let closed = reader.as_raw_fd() as u32;
        drop((reader, writer));
        assert!(!may_write(closed) || std::fs::metadata(format!("/proc/self/fd/{closed}")).is_ok());
        assert!(!may_write(i32::MAX as u32));
        let _ = std::fs::remove_dir_all(&dir);
    }
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::FileTypeExt;

    /// A write under way has its temporary file listed; removing the temporaries (as `prof`
    /// does when a signal ends it) removes it, and the write then fails instead of renaming
    /// a file into place.
    #[test]
    fn the_temporary_file_of_a_write_under_way_can_be_removed() {
        let dir = fresh("live");
        let target = dir.join("out.json");
        let result = super::write_atomic_with(&target, |out| {
            out.write_all(b"half")?;
            // This test's alone: the other tests' writes run beside it.
            let removed = super::remove_live(|p| p.starts_with(&dir), |n| n);
            assert_eq!(removed, 1);
            Ok(())
        });
        assert!(
            result.is_err(),
            "the write went on after its file was removed"
        );
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
        // Finished writes are no longer listed: nothing of theirs is removed.
        super::write_atomic(&target, b"whole").unwrap();
        assert_eq!(super::remove_live(|p| p.starts_with(&dir), |n| n), 0);
        assert_eq!(std::fs::read(&target).unwrap(), b"whole");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("prof-out-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(names.len(), 1);
        let bad = dir.join("missing").join("p.json");
        assert!(write_atomic(&bad, b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A streamed write replaces the target only when the writer finished: a failure halfway
    /// (a trace writer that hit an error after writing megabytes) leaves the old file and no
    /// temporary file behind.
    #[test]
    fn a_streamed_write_replaces_only_when_it_succeeds() {
        let dir = std::env::temp_dir().join(format!("prof-out-stream-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("trace.json");
        let chunk = vec![b'x'; 300_000];
        write_atomic_with(&path, |out| {
            for _ in 0..10 {
                out.write_all(&chunk)?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 3_000_000);
        let e = write_atomic_with(&path, |out| {
            out.write_all(&chunk)?;
            Err(std::io::Error::other("the writer gave up"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "the writer gave up");
        assert_eq!(std::fs::read(&path).unwrap().len(), 3_000_000);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn special_targets_are_never_replaced() {
        let dir = std::env::temp_dir().join(format!("prof-out-special-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A character device.
        let err = write_atomic(Path::new("/dev/null"), b"x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("character device"), "{err}");
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        // A FIFO.
        let fifo = dir.join("pipe");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let err = write_atomic(&fifo, b"x").unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        // A link to a device: refused, and the link stays.
        let link = dir.join("out.json");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let err = write_atomic(&link, b"x").unwrap_err();
        assert!(err.to_string().contains("through a symbolic link"), "{err}");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        // A link to a regular file: the file is written, the link stays a link.
        std::fs::remove_file(&link).unwrap();
        std::fs::write(dir.join("real.json"), b"old").unwrap();
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(dir.join("real.json")).unwrap(), b"new");
        // A path naming a directory.
        let err = write_atomic(&dir.join("sub/"), b"x").unwrap_err();
        assert!(err.to_string().contains("names a directory"), "{err}");
        let err = write_atomic(&dir, b"x").unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn fresh(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prof-out-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[cfg(unix)]
    #[test]
    fn the_old_predictable_temporary_names_are_never_opened() {
        let dir = fresh("planted");
        std::fs::write(dir.join("victim"), b"V").unwrap();
        let target = dir.join("p.json");
        // What an attacker plants where the old scheme put its temporary file.
        let old_name = dir.join(format!(".p.json.tmp.{}", std::process::id()));
        std::os::unix::fs::symlink(dir.join("victim"), &old_name).unwrap();
        check_writable(&target).unwrap();
        write_atomic(&target, b"results").unwrap();
        assert_eq!(std::fs::read(dir.join("victim")).unwrap(), b"V");
        assert_eq!(std::fs::read(&target).unwrap(), b"results");
        assert!(std::fs::symlink_metadata(&old_name)
            .unwrap()
            .file_type()
            .is_symlink());
        // The temporary name is new each time, and leaves nothing behind.
        let a = create_temp(&target).unwrap();
        let b = create_temp(&target).unwrap();
        assert_ne!(a.path(), b.path());
        let name = a.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(".p.json.") && name.ends_with(".tmp"),
            "{name}"
        );
        drop((a, b));
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left.len(), 3, "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_legal_255_byte_name_is_written_and_a_longer_one_refused_early() {
        let dir = fresh("long");
        let name = format!("{}.json", "p".repeat(250));
        assert_eq!(name.len(), 255);
        let target = dir.join(&name);
        check_writable(&target).unwrap();
        write_atomic(&target, b"x").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"x");
        let too_long = dir.join(format!("{}.json", "p".repeat(251)));
        let err = check_writable(&too_long).unwrap_err();
        assert!(err.to_string().contains("too long"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn open_descriptors_are_refused_and_left_alone() {
        let dir = fresh("descriptors");
        let log = dir.join("log");
        std::fs::write(&log, b"earlier lines\n").unwrap();
        let open = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        use std::os::fd::AsRawFd;
        let fd = open.as_raw_fd();
        for path in [
            log.clone(),
            PathBuf::from(format!("/proc/self/fd/{fd}")),
            PathBuf::from(format!("/dev/fd/{fd}")),
        ] {
            let err = write_atomic(&path, b"results").unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
            let text = err.to_string();
            assert!(
                text.contains(&format!("descriptor {fd}")) || text.contains("open file descriptor"),
                "{}: {text}",
                path.display()
            );
        }
        // A link of one's own to the log counts too.
        let link = dir.join("out.json");
        std::os::unix::fs::symlink(&log, &link).unwrap();
        assert!(write_atomic(&link, b"results").is_err());
        drop(open);
        assert_eq!(std::fs::read(&log).unwrap(), b"earlier lines\n");
        // A file this process only reads (a reader of the results, between two writes) loses
        // nothing when it is replaced: the write goes ahead.
        let results = dir.join("prof.json");
        std::fs::write(&results, b"old").unwrap();
        let reader = std::fs::File::open(&results).unwrap();
        write_atomic(&results, b"new").unwrap();
        assert_eq!(std::fs::read(&results).unwrap(), b"new");
        drop(reader);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_target_keeps_its_mode_and_a_new_one_gets_the_umasks() {
        use std::os::unix::fs::PermissionsExt;
        let dir = fresh("modes");
        let target = dir.join("p.json");
        write_atomic(&target, b"one").unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        // Whatever the umask, a plain create never gives more than 0666.
        assert_eq!(mode & !0o666, 0, "{mode:o}");
        assert_ne!(mode & 0o600, 0, "{mode:o}");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&target, b"two").unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
