//! `--progress`: a progress bar on a terminal, one JSON line per
//! notification otherwise, on stderr either way.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::client::{Progress, RequestOptions};

/// Positions of the bar: progress is shown in thousandths of the total.
const SCALE: f64 = 1000.0;

/// Shows a request's progress until the request's options are dropped.
pub(crate) struct ProgressView {
    printer: JoinHandle<()>,
}

impl ProgressView {
    /// Adds a progress channel to `opts` and starts showing what arrives on
    /// it.
    pub(crate) fn attach(opts: RequestOptions) -> (RequestOptions, ProgressView) {
        let (tx, rx) = mpsc::unbounded_channel::<Progress>();
        let printer = if std::io::stderr().is_terminal() {
            tokio::spawn(bar(rx))
        } else {
            tokio::spawn(lines(rx))
        };
        (opts.progress(tx), ProgressView { printer })
    }

    /// Waits until everything received is shown. Call it once the request's
    /// options are gone, since their sender ends the stream.
    pub(crate) async fn finish(self) {
        let _ = self.printer.await;
    }
}

/// One JSON line per notification: the params as the server sent them.
async fn lines(mut rx: mpsc::UnboundedReceiver<Progress>) {
    while let Some(p) = rx.recv().await {
        let _ = writeln!(std::io::stderr().lock(), "{}", p.raw);
    }
}

async fn bar(mut rx: mpsc::UnboundedReceiver<Progress>) {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let mut styled = false;
    while let Some(p) = rx.recv().await {
        if !styled {
            styled = true;
            let template = if p.total.is_some() {
                "{spinner} [{bar:30}] {percent:>3}% {msg}"
            } else {
                "{spinner} {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            if p.total.is_some() {
                bar.set_length(SCALE as u64);
            }
        }
        match p.total {
            Some(total) if total > 0.0 => {
                bar.set_position(((p.progress / total).clamp(0.0, 1.0) * SCALE) as u64)
            }
            _ => bar.tick(),
        }
        let msg = match (&p.message, p.total) {
            (Some(m), _) => m.clone(),
            (None, Some(t)) => format!("{}/{}", p.progress, t),
            (None, None) => format!("{}", p.progress),
        };
        bar.set_message(msg);
    }
    bar.finish();
}
