//! Pure functions that turn configuration into what is spawned: executable
//! resolution, the batch-file rule and the child's environment.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{ConfigError, SpawnError};
use crate::secret::EnvValue;

/// Variables inherited from this process's environment (POSIX).
pub(crate) const INHERITED_ENV_POSIX: &[&str] =
    &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Variables inherited from this process's environment (Windows).
pub(crate) const INHERITED_ENV_WINDOWS: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// The allowlist for this platform.
pub(crate) fn inherited_env_names() -> &'static [&'static str] {
    if cfg!(windows) {
        INHERITED_ENV_WINDOWS
    } else {
        INHERITED_ENV_POSIX
    }
}

/// Characters refused in the arguments of an allowed batch file: `cmd.exe`
/// re-parses them (BatBadBut).
pub(crate) const BATCH_REFUSED_CHARS: &[char] = &['"', '%', '^', '&', '|', '<', '>'];

/// The `.bat`/`.cmd` rule, as a pure function tested on every platform.
///
/// Windows runs batch files through `cmd.exe`, which re-parses their
/// arguments, so they are refused unless `allow`; when allowed, an argument
/// containing any of [`BATCH_REFUSED_CHARS`] is still refused.
pub(crate) fn check_batch_file(
    command: &str,
    args: &[String],
    allow: bool,
) -> Result<(), ConfigError> {
    let lower = command.to_ascii_lowercase();
    if !(lower.ends_with(".bat") || lower.ends_with(".cmd")) {
        return Ok(());
    }
    if !allow {
        return Err(ConfigError::new(
            "allow_batch_files",
            format!("{command:?} is a batch file, which cmd.exe runs with re-parsed arguments; set allow_batch_files to run it"),
        ));
    }
    if let Some((i, c)) = args.iter().enumerate().find_map(|(i, a)| {
        a.chars()
            .find(|c| BATCH_REFUSED_CHARS.contains(c))
            .map(|c| (i, c))
    }) {
        return Err(ConfigError::new(
            "args",
            format!("argument {i} contains {c:?}, which cmd.exe would re-parse for a batch file"),
        ));
    }
    Ok(())
}

/// Resolves `command` to an executable: an absolute path is checked, a bare
/// name is looked up in `path_var` (colon- or semicolon-separated).
///
/// A path that does not exist is [`SpawnError::NotFound`]; one that exists
/// but cannot be run (a directory, a file without execute permission) is
/// [`SpawnError::NotExecutable`]. In a `PATH` search, a match that cannot
/// be run is skipped like a shell does, and reported only if no later
/// directory has one that can.
pub(crate) fn resolve_executable(
    command: &str,
    path_var: Option<&str>,
) -> Result<PathBuf, SpawnError> {
    let p = Path::new(command);
    if p.is_absolute() {
        return match kind(p) {
            Kind::Executable => Ok(p.to_path_buf()),
            Kind::Missing => Err(SpawnError::NotFound {
                command: command.to_owned(),
                searched_path: false,
            }),
            Kind::NotExecutable => Err(SpawnError::NotExecutable {
                path: p.display().to_string(),
            }),
        };
    }
    let sep = if cfg!(windows) { ';' } else { ':' };
    let mut unrunnable = None;
    for dir in path_var.unwrap_or("").split(sep).filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(command);
        let mut candidates = vec![candidate.clone()];
        if cfg!(windows) {
            candidates.extend(["exe", "cmd", "bat"].map(|ext| candidate.with_extension(ext)));
        }
        for c in candidates {
            match kind(&c) {
                Kind::Executable => return Ok(c),
                Kind::NotExecutable => {
                    unrunnable.get_or_insert(c);
                }
                Kind::Missing => {}
            }
        }
    }
    Err(match unrunnable {
        Some(p) => SpawnError::NotExecutable {
            path: p.display().to_string(),
        },
        None => SpawnError::NotFound {
            command: command.to_owned(),
            searched_path: true,
        },
    })
}

/// What is at a path, as far as running it goes.
enum Kind {
    Missing,
    NotExecutable,
    Executable,
}

fn kind(p: &Path) -> Kind {
    let Ok(m) = std::fs::metadata(p) else {
        return Kind::Missing;
    };
    #[cfg(unix)]
    let runnable = {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    };
    #[cfg(not(unix))]
    let runnable = m.is_file();
    if runnable {
        Kind::Executable
    } else {
        Kind::NotExecutable
    }
}

/// The child's whole environment: the allowlisted variables of `inherited`
/// (minus values starting with `()`, exported shell functions), then
/// `configured`, which wins (its last value of a name, if it repeats one).
/// Secret values are exposed here and only here. Linear in the number of
/// variables.
pub(crate) fn child_env<I>(
    inherited: I,
    configured: &[(String, EnvValue)],
) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    let allow = inherited_env_names();
    let mut names = HashSet::with_capacity(configured.len());
    // The last value of each configured name, found from the end.
    let mut set: Vec<(OsString, OsString)> = configured
        .iter()
        .rev()
        .filter(|(k, _)| names.insert(k.as_str()))
        .map(|(k, v)| (k.into(), v.expose().into()))
        .collect();
    set.reverse();
    let mut out: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(k, v)| {
            k.to_str()
                .is_some_and(|k| allow.contains(&k) && !names.contains(k))
                && !v.as_encoded_bytes().starts_with(b"()")
        })
        .collect();
    out.append(&mut set);
    out
}

/// The value of PATH the child will see (configured PATH wins).
pub(crate) fn effective_path(configured: &[(String, EnvValue)]) -> Option<String> {
    configured
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.expose().to_owned())
        .or_else(|| std::env::var("PATH").ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    #[test]
    fn batch_files_refused_unless_allowed() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_batch_file("server.exe", &args(&["%x%"]), false).is_ok());
        assert_eq!(
            check_batch_file("npx.CMD", &[], false).unwrap_err().key,
            "allow_batch_files"
        );
        assert!(check_batch_file("run.bat", &args(&["plain", "a-b"]), true).is_ok());
        for bad in ["\"", "%PATH%", "a^b", "a&b", "a|b", "<", ">"] {
            assert_eq!(
                check_batch_file("run.bat", &args(&["ok", bad]), true)
                    .unwrap_err()
                    .key,
                "args",
                "{bad}"
            );
        }
    }

    #[test]
    fn env_is_allowlist_plus_configured() {
        let inherited = [
            ("HOME", "/root"),
            ("PATH", "/bin"),
            ("SECRET_TOKEN", "leak"),
            ("SHELL", "() { :; }"),
            ("TERM", "xterm"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let configured = vec![
            ("PATH".to_string(), EnvValue::from("/custom")),
            ("TOKEN".to_string(), EnvValue::from(Secret::new("hidden"))),
        ];
        let mut env = child_env(inherited, &configured);
        env.sort();
        let want: Vec<(OsString, OsString)> = [
            ("HOME", "/root"),
            ("PATH", "/custom"),
            ("TERM", "xterm"),
            ("TOKEN", "hidden"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .into();
        assert_eq!(env, want);
    }

    #[test]
    fn resolves_in_path() {
        let sh = resolve_executable("sh", Some("/nonexistent:/bin:/usr/bin")).unwrap();
        assert!(sh.ends_with("sh"));
        assert!(matches!(
            resolve_executable("no-such-binary-xyz", Some("/bin")),
            Err(SpawnError::NotFound {
                searched_path: true,
                ..
            })
        ));
        assert!(matches!(
            resolve_executable("/no/such/abs", None),
            Err(SpawnError::NotFound { .. })
        ));
        // It exists, but cannot be run: say so, not "not found".
        for path in ["/etc/passwd", "/tmp"] {
            match resolve_executable(path, None) {
                Err(SpawnError::NotExecutable { path: p }) => assert_eq!(p, path),
                other => panic!("{path}: {other:?}"),
            }
        }
        assert!(matches!(
            resolve_executable("passwd", Some("/etc")),
            Err(SpawnError::NotExecutable { .. })
        ));
    }
}
