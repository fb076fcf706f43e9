//! Reading a file a config names, the config file itself or an `envFile`:
//! bounded in bytes, and never blocking on something that is not a file.
//!
//! A path in a config can name a FIFO, which waits for a writer for ever
//! when opened for reading, a device that never ends such as `/dev/zero`,
//! or a huge file. So the file is opened non-blocking, which on unix opens
//! a FIFO at once. It is checked on the open descriptor to be a regular
//! file, so no rename can race between a check and the open. It is read up to its limit plus one
//! byte, so a file that grows while it is read is caught too. A regular
//! file's read does not wait on anyone, so this is safe to call from async
//! code such as `Host::load`.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub(super) enum Problem {
    /// The OS refused, for a missing file or permissions, or the text is
    /// not UTF-8.
    Io(io::Error),
    /// Not a regular file: what it is instead.
    NotAFile(&'static str),
    /// Longer than the limit: its length. For a file that grew while it was
    /// read, it is at least this.
    TooLarge(u64),
}

/// The UTF-8 text of the regular file at `path`, at most `limit` bytes.
pub(super) fn read_text(path: &Path, limit: u64) -> Result<String, Problem> {
    let file = open(path).map_err(Problem::Io)?;
    let meta = file.metadata().map_err(Problem::Io)?;
    if !meta.is_file() {
        return Err(Problem::NotAFile(kind(&meta)));
    }
    if meta.len() > limit {
        return Err(Problem::TooLarge(meta.len()));
    }
    // The length is at most `limit`, so the capacity is bounded too.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Problem::Io)?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > limit {
        return Err(Problem::TooLarge(read));
    }
    String::from_utf8(bytes).map_err(|_| {
        Problem::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })
}

#[cfg(unix)]
fn open(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: a FIFO opens without waiting for a writer (a regular
    // file's reads ignore the flag). O_NOCTTY: a terminal never becomes
    // this process's controlling terminal.
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).open(path)
}

/// What a file that is not a regular one is, in words.
fn kind(meta: &Metadata) -> &'static str {
    if meta.is_dir() {
        return "directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_char_device() {
            return "character device";
        }
        if t.is_block_device() {
            return "block device";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    "special file"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_at_its_limit_is_read_and_one_byte_more_is_refused() {
        let dir = std::env::temp_dir().join(format!("conduit-read-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, "12345").unwrap();
        assert_eq!(read_text(&path, 5).unwrap(), "12345");
        assert!(matches!(read_text(&path, 4), Err(Problem::TooLarge(5))));
        assert!(matches!(
            read_text(&dir, 5),
            Err(Problem::NotAFile("directory"))
        ));
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(
            matches!(read_text(&path, 5), Err(Problem::Io(e)) if e.kind() == io::ErrorKind::InvalidData)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
