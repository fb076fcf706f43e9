//! Pure functions that turn configuration into what is spawned: executable
//! resolution, the batch-file rule and the child's environment.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{ConfigError, SpawnError};
use crate::secret::{Arg, EnvValue, MaybeSecret, Secret};

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
    command: &Arg,
    args: &[Arg],
    allow: bool,
) -> Result<(), ConfigError> {
    let lower = command.expose().to_ascii_lowercase();
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
        a.expose()
            .chars()
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

/// The program to run: an absolute path, and how errors and logs name it.
#[derive(Debug)]
pub(crate) struct Executable {
    /// Absolute, so the file that was checked is the one that runs, even
    /// when the child changes directory first.
    path: PathBuf,
    /// Whether the command was a secret.
    secret: bool,
}

impl Executable {
    /// The executable's absolute path.
    #[inline]
    pub(crate) fn path(&self) -> &PathBuf {
        &self.path
    }

    /// How errors and logs name it: the path, or `***` for a secret.
    pub(crate) fn name(&self) -> Arg {
        let path = self.path.to_string_lossy().into_owned();
        if self.secret {
            Secret::new(path).into()
        } else {
            MaybeSecret::Plain(path)
        }
    }
}

/// Resolves `command` to an executable: an absolute path is checked, a bare
/// name is looked up in `path_var` (colon- or semicolon-separated).
///
/// The result is always absolute. A relative entry of `PATH` (`.`, `bin`;
/// an empty one is skipped) is taken from this process's current
/// directory, as a shell does, and the match is made absolute here: the
/// child changes to its own directory (`cd`) before `execve`, which would
/// otherwise run `<cd>/bin/tool` rather than the `bin/tool` found here.
///
/// A path that does not exist is [`SpawnError::NotFound`]; one that exists
/// but cannot be run (a directory, a file without execute permission) is
/// [`SpawnError::NotExecutable`]. In a `PATH` search, a match that cannot
/// be run is skipped like a shell does, and reported only if no later
/// directory has one that can. A secret command is named `***` in errors.
pub(crate) fn resolve_executable(
    command: &Arg,
    path_var: Option<&str>,
) -> Result<Executable, SpawnError> {
    let secret = command.is_secret();
    let shown = |p: &Path| {
        if secret {
            command.to_string()
        } else {
            p.display().to_string()
        }
    };
    let p = Path::new(command.expose());
    if p.is_absolute() {
        return match kind(p) {
            Kind::Executable => Ok(Executable {
                path: p.to_path_buf(),
                secret,
            }),
            Kind::Missing => Err(SpawnError::NotFound {
                command: command.to_string(),
                searched_path: false,
            }),
            Kind::NotExecutable => Err(SpawnError::NotExecutable { path: shown(p) }),
        };
    }
    let sep = if cfg!(windows) { ';' } else { ':' };
    let mut unrunnable = None;
    for dir in path_var.unwrap_or("").split(sep).filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(p);
        let mut candidates = vec![candidate.clone()];
        if cfg!(windows) {
            candidates.extend(["exe", "cmd", "bat"].map(|ext| candidate.with_extension(ext)));
        }
        for c in candidates {
            match kind(&c) {
                Kind::Executable => {
                    // Made absolute against the directory it was found from.
                    let path = std::path::absolute(&c).map_err(|source| SpawnError::Io {
                        executable: shown(&c),
                        source,
                    })?;
                    return Ok(Executable { path, secret });
                }
                Kind::NotExecutable => {
                    unrunnable.get_or_insert(c);
                }
                Kind::Missing => {}
            }
        }
    }
    Err(match unrunnable {
        Some(p) => SpawnError::NotExecutable { path: shown(&p) },
        None => SpawnError::NotFound {
            command: command.to_string(),
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

    #[test]
    fn batch_files_refused_unless_allowed() {
        let args = |a: &[&str]| a.iter().map(|s| Arg::from(*s)).collect::<Vec<_>>();
        let bat = Arg::from("run.bat");
        assert!(check_batch_file(&"server.exe".into(), &args(&["%x%"]), false).is_ok());
        assert_eq!(
            check_batch_file(&"npx.CMD".into(), &[], false)
                .unwrap_err()
                .key,
            "allow_batch_files"
        );
        assert!(check_batch_file(&bat, &args(&["plain", "a-b"]), true).is_ok());
        for bad in ["\"", "%PATH%", "a^b", "a&b", "a|b", "<", ">"] {
            assert_eq!(
                check_batch_file(&bat, &args(&["ok", bad]), true)
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
        let resolve = |c: &str, path| resolve_executable(&c.into(), path);
        let sh = resolve("sh", Some("/nonexistent:/bin:/usr/bin")).unwrap();
        assert!(sh.path.ends_with("sh"));
        assert!(matches!(
            resolve("no-such-binary-xyz", Some("/bin")),
            Err(SpawnError::NotFound {
                searched_path: true,
                ..
            })
        ));
        assert!(matches!(
            resolve("/no/such/abs", None),
            Err(SpawnError::NotFound { .. })
        ));
        // It exists, but cannot be run: say so, not "not found".
        for path in ["/etc/passwd", "/tmp"] {
            match resolve(path, None) {
                Err(SpawnError::NotExecutable { path: p }) => assert_eq!(p, path),
                other => panic!("{path}: {other:?}"),
            }
        }
        assert!(matches!(
            resolve("passwd", Some("/etc")),
            Err(SpawnError::NotExecutable { .. })
        ));
    }

    #[test]
    fn a_match_through_a_relative_path_entry_is_made_absolute() {
        // `../../..(..)/bin`, relative to this process's directory.
        let depth = std::env::current_dir().unwrap().components().count() - 1;
        let rel = format!("{}bin", "../".repeat(depth));
        let sh = resolve_executable(&"sh".into(), Some(&rel)).unwrap();
        assert!(sh.path.is_absolute(), "{}", sh.path.display());
        assert!(sh.path.ends_with("bin/sh"));
    }

    #[test]
    fn a_secret_command_is_never_named_in_errors() {
        let secret: Arg = Secret::new("/no/such/s3cr3t-tool").into();
        let relative: Arg = Secret::new("s3cr3t-tool").into();
        let unrunnable: Arg = Secret::new("/etc/passwd").into();
        for e in [
            resolve_executable(&secret, None).unwrap_err(),
            resolve_executable(&relative, Some("/bin")).unwrap_err(),
            resolve_executable(&unrunnable, None).unwrap_err(),
        ] {
            let shown = format!("{e} {e:?}");
            assert!(
                !shown.contains("s3cr3t") && !shown.contains("passwd"),
                "{shown}"
            );
        }
        let sh: Arg = Secret::new("/bin/sh").into();
        assert_eq!(
            resolve_executable(&sh, None).unwrap().name().to_string(),
            "***"
        );
    }
}
