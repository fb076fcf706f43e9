//! `--verbose`: what `mcp` is about to run, said before it runs it.
//!
//! A config file runs every command in it. There is no workspace trust:
//! reading `.mcp.json` from a cloned repository runs that repository's
//! choices. So with `--verbose` the file and each server's command line,
//! with its directory, are printed on stderr before the server starts.
//! Secret values, taken from the environment or an env file, show as `***`.

use std::path::Path;

use crate::client::{ClientConfig, ClientTransport};
use crate::secret::MaybeSecret;

/// Says which config file was read.
pub(super) fn config_file(path: &Path) {
    eprintln!(
        "mcp: config file {} (a config file runs every command in it)",
        path.display()
    );
}

/// Says which command is about to run, and where.
pub(super) fn server(config: &ClientConfig) {
    eprintln!("mcp: {}", describe(config));
}

/// `server NAME: COMMAND ARGS... (in DIR)`, or `running COMMAND ARGS...
/// (in DIR)` for the command after `--`; `NAME: Streamable HTTP at URL`
/// for a remote server.
fn describe(config: &ClientConfig) -> String {
    let child = match &config.transport {
        ClientTransport::Stdio(child) => child,
        // Nothing runs here: say where requests go (no credentials or
        // query; header values never).
        ClientTransport::Http(http) => {
            let name = config.get_name().unwrap_or("the server");
            return format!("{name}: Streamable HTTP at {}", http.display_url());
        }
    };
    let line: Vec<String> = std::iter::once(&child.command)
        .chain(&child.args)
        .map(word)
        .collect();
    let dir = match &child.cd {
        Some(dir) => dir.to_string(),
        None => std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| "the current directory".into()),
    };
    let line = line.join(" ");
    match &config.get_name() {
        Some(name) => format!("server {name}: {line} (in {dir})"),
        None => format!("running {line} (in {dir})"),
    }
}

/// One word of a command line: as is when it reads unambiguously, quoted
/// otherwise, `***` for a secret.
fn word(w: &MaybeSecret) -> String {
    match w {
        MaybeSecret::Plain(s)
            if !s.is_empty()
                && s.chars()
                    .all(|c| c.is_alphanumeric() || "_-./:=@%+,".contains(c)) =>
        {
            s.clone()
        }
        MaybeSecret::Plain(s) => format!("{s:?}"),
        secret => secret.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    #[test]
    fn a_command_line_is_quoted_where_needed_and_secrets_are_stars() {
        let mut c = ClientConfig::new("/bin/srv")
            .args(["--flag=1", "two words", ""])
            .arg(Secret::new("t0k"))
            .cd("/work");
        assert_eq!(
            describe(&c),
            r#"running /bin/srv --flag=1 "two words" "" *** (in /work)"#
        );
        c = c.name("gh");
        assert!(describe(&c).starts_with("server gh: /bin/srv "));
    }
}
