//! The reaper's reports: the record both ends of its report pipe use, and
//! the reading of the server's exit from it (see the `reaper` module).

use std::io;

use libc::c_int;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use crate::error::ChildExit;

/// Reports: `[kind, a, b]`, native-endian `i32`s (12 bytes: written at once).
pub(super) const LAUNCHED: i32 = 1;
pub(super) const EXITED: i32 = 2;
pub(super) const RECORD_BYTES: usize = 12;

/// The server's exit, as the reaper reports it.
#[derive(Debug)]
pub(crate) struct ExitReports {
    pipe: pipe::Receiver,
    buf: [u8; RECORD_BYTES],
    got: usize,
}

impl ExitReports {
    /// Reads the reports arriving on `pipe`.
    pub(super) fn new(pipe: pipe::Receiver) -> Self {
        Self {
            pipe,
            buf: [0; RECORD_BYTES],
            got: 0,
        }
    }

    /// Waits for the report of the server's exit. An error of kind
    /// [`io::ErrorKind::BrokenPipe`]: the reaper ended first (killed from
    /// outside); the server may then have been reaped by init, so its pid
    /// must not be signalled any more.
    ///
    /// Cancel safety: cancel safe (a partial record is kept).
    pub(super) async fn wait(&mut self) -> io::Result<ChildExit> {
        while self.got < RECORD_BYTES {
            let n = self.pipe.read(&mut self.buf[self.got..]).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the server's reaper process ended before the server",
                ));
            }
            self.got += n;
        }
        match record(&self.buf) {
            [EXITED, code, status] => Ok(exit_of(code, status)),
            _ => Err(io::Error::other("the reaper sent an unexpected report")),
        }
    }
}

pub(super) fn record(buf: &[u8; RECORD_BYTES]) -> [i32; 3] {
    let word = |i: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&buf[i * 4..i * 4 + 4]);
        i32::from_ne_bytes(w)
    };
    [word(0), word(1), word(2)]
}

/// A `waitid` result as a [`ChildExit`].
fn exit_of(code: c_int, status: c_int) -> ChildExit {
    if code == libc::CLD_EXITED {
        ChildExit::Code(status)
    } else {
        ChildExit::Signal(status)
    }
}
