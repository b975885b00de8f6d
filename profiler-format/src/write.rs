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
/// a regular file (a directory, a FIFO, a device such as `/dev/stdout`, a socket): an atomic
/// write replaces its target by renaming a new file over it, and must never replace those. A
/// path that ends in `/` names a directory and fails too.
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
    }
    let mut target = path.to_path_buf();
    for _ in 0..40 {
        let meta = match std::fs::symlink_metadata(&target) {
            Ok(meta) => meta,
            // Nothing there yet: the write creates it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(target),
            Err(e) => {
                return Err(format!(
                    "cannot inspect {}: {e}",
                    shorten(&target.display().to_string(), 200)
                ))
            }
        };
        if meta.file_type().is_symlink() {
            let link = std::fs::read_link(&target)
                .map_err(|e| format!("cannot read the link {shown}: {e}"))?;
            target = match target.parent() {
                Some(dir) if link.is_relative() => dir.join(link),
                _ => link,
            };
            continue;
        }
        return match special_kind(&meta) {
            None => Ok(target),
            Some(kind) => Err(format!(
                "{shown} links to {}, which is {kind}; results are written to a new file \
                 renamed over the old one, which must not replace {kind}",
                shorten(&target.display().to_string(), 200)
            )),
        };
    }
    Err(format!("{shown}: too many levels of symbolic links"))
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

/// The temporary file [`write_atomic`] writes first, beside `target`.
pub fn temp_path(target: &Path) -> PathBuf {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "prof.json".into());
    dir.join(format!(".{name}.tmp.{}", std::process::id()))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed, then
/// renamed over the target, so a reader never sees half a file.
///
/// A symbolic link is followed (the file it points to is replaced, the link stays). A target
/// that is not a regular file (a directory, a FIFO, a device such as `/dev/stdout`) is never
/// replaced: the write fails with [`std::io::ErrorKind::InvalidInput`] (see [`check_target`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = check_target(path)
        .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
    let tmp = temp_path(&target);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::FileTypeExt;

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
}
