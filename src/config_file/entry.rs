//! One server entry of a config file, read into a [`ClientConfig`].

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use super::interpolate::{Expanded, Problem, Variables};
use super::{env_file, read, ConfigFileError, ServeOptions, OPTIONS_KEY};
use crate::client::{merge_env, ClientConfig, ClientTransport, StderrMode, StdioCommand};
use crate::secret::{Arg, EnvValue, MaybeSecret, Secret};

/// Fields of [`ClientConfig`] that an entry sets with its own keys, so
/// they may not appear under the options key.
const SET_BY_ENTRY: &[&str] = &["command", "args", "env", "cd", "cwd", "name", "http"];

/// What one entry is.
pub(super) enum Outcome {
    /// A server to start, a command or a Streamable HTTP server, and its
    /// gateway options.
    Server(Box<ClientConfig>, ServeOptions),
    /// `"disabled": true`.
    Disabled,
    /// Not a stdio server: why.
    Unsupported(String),
}

/// The file being read, and how its strings expand.
pub(super) struct Context<'a> {
    /// The config file, as an absolute path.
    pub(super) file: &'a Path,
    /// Its directory: relative paths start here.
    pub(super) dir: &'a Path,
    pub(super) vars: Variables<'a>,
}

impl Context<'_> {
    pub(super) fn invalid(&self, key: &str, problem: impl Into<String>) -> ConfigFileError {
        ConfigFileError::Invalid {
            file: self.file.to_owned(),
            key: key.to_owned(),
            problem: problem.into(),
        }
    }

    /// Expands the variables of the string at `key`; returns the text and
    /// whether part of it came from the environment.
    fn expand(&self, key: &str, value: &str) -> Result<(String, bool), ConfigFileError> {
        self.vars
            .expand(value)
            .map(Expanded::into_parts)
            .map_err(|p| match p {
                Problem::Unset(variable) => ConfigFileError::UnsetVariable {
                    file: self.file.to_owned(),
                    key: key.to_owned(),
                    variable,
                },
                Problem::Unsupported(variable) => ConfigFileError::UnsupportedVariable {
                    file: self.file.to_owned(),
                    key: key.to_owned(),
                    variable,
                },
            })
    }

    /// The string at `key`, expanded; whether part of it came from the
    /// environment.
    fn string(&self, key: &str, v: &Value) -> Result<(String, bool), ConfigFileError> {
        let s = v
            .as_str()
            .ok_or_else(|| self.invalid(key, "must be a string"))?;
        self.expand(key, s)
    }

    /// The string at `key`, expanded: a [`Secret`] if part of it came from
    /// the environment.
    fn value(&self, key: &str, v: &Value) -> Result<MaybeSecret, ConfigFileError> {
        let (text, from_env) = self.string(key, v)?;
        Ok(keep(text, from_env))
    }

    /// A path at `key`, expanded; a relative one is taken from the file's
    /// directory. Whether part of it came from the environment.
    fn path(&self, key: &str, v: &Value) -> Result<(PathBuf, bool), ConfigFileError> {
        let (text, from_env) = self.string(key, v)?;
        Ok((self.resolve(Path::new(&text)), from_env))
    }

    fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            return p.to_owned();
        }
        // `./server.js` becomes `<dir>/server.js`, not `<dir>/./server.js`.
        self.dir
            .join(p)
            .components()
            .filter(|c| *c != Component::CurDir)
            .collect()
    }
}

/// The first `${input:ID}` in the entry at `key` whose ID has no value, and
/// the key it is at; `None` for a disabled entry. The entry's options are
/// left out, since they are not expanded.
pub(super) fn unsupplied_input(
    ctx: &Context<'_>,
    key: &str,
    value: &Value,
) -> Option<(String, String)> {
    fn walk(ctx: &Context<'_>, key: String, v: &Value) -> Option<(String, String)> {
        match v {
            Value::String(s) => super::interpolate::inputs(s)
                .find(|id| !ctx.vars.has_input(id))
                .map(|id| (key, id.to_owned())),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(ctx, format!("{key}[{i}]"), v)),
            Value::Object(m) => m
                .iter()
                .find_map(|(k, v)| walk(ctx, format!("{key}.{k}"), v)),
            _ => None,
        }
    }
    let Value::Object(entry) = value else {
        return None;
    };
    if entry.get("disabled") == Some(&Value::Bool(true)) {
        return None;
    }
    entry
        .iter()
        .filter(|(k, _)| k.as_str() != OPTIONS_KEY)
        .find_map(|(k, v)| walk(ctx, format!("{key}.{k}"), v))
}

/// Reads the entry `name` at `key`, such as `mcpServers.github`.
pub(super) fn read(
    ctx: &Context<'_>,
    key: &str,
    name: &str,
    value: &Value,
) -> Result<Outcome, ConfigFileError> {
    let Value::Object(entry) = value else {
        return Err(ctx.invalid(key, "must be an object"));
    };
    let field = |f: &str| format!("{key}.{f}");
    match entry.get("disabled") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => return Ok(Outcome::Disabled),
        Some(_) => return Err(ctx.invalid(&field("disabled"), "must be true or false")),
    }
    let remote = match entry.get("type") {
        None => entry.contains_key("url") && !entry.contains_key("command"),
        Some(Value::String(t)) if t == "stdio" => false,
        Some(Value::String(t)) if REMOTE_TYPES.contains(&t.as_str()) => true,
        Some(Value::String(t)) if t == "sse" => {
            return Ok(Outcome::Unsupported(
                "type \"sse\": the deprecated HTTP+SSE transport (MCP 2024-11-05) is not \
                 supported; servers that speak Streamable HTTP work with type \"http\""
                    .into(),
            ))
        }
        Some(Value::String(t)) => {
            return Ok(Outcome::Unsupported(format!(
                "type {t:?}: only stdio and Streamable HTTP (\"http\") servers are supported"
            )))
        }
        Some(_) => return Err(ctx.invalid(&field("type"), "must be a string")),
    };
    if remote {
        return remote_server(ctx, key, name, entry);
    }
    let Some(command) = entry.get("command") else {
        return Err(ctx.invalid(&field("command"), "missing"));
    };
    let command = command_path(ctx, &field("command"), command)?;
    let (mut config, serve) = options(ctx, &field(OPTIONS_KEY), entry.get(OPTIONS_KEY))?;
    config = config.name(name);
    let (cwd, from_env) = match entry.get("cwd") {
        Some(cwd) => ctx.path(&field("cwd"), cwd)?,
        None => (ctx.dir.to_owned(), false),
    };
    // The options' `stderr` and `allow_batch_files`, the rest from the
    // entry.
    let mut child = match std::mem::replace(
        &mut config.transport,
        ClientTransport::Stdio(StdioCommand::default()),
    ) {
        ClientTransport::Stdio(child) => child,
        ClientTransport::Http(_) => StdioCommand::default(),
    };
    child.command = command;
    child.args = args(ctx, &field("args"), entry.get("args"))?;
    child.cd = Some(keep(cwd.to_string_lossy().into_owned(), from_env));
    child.env = environment(ctx, key, entry)?;
    if let StderrMode::File(p) = &child.stderr {
        child.stderr = StderrMode::File(ctx.resolve(p));
    }
    config.transport = ClientTransport::Stdio(child);
    Ok(Outcome::Server(Box::new(config), serve))
}

/// The `type`s of a Streamable HTTP server: `http` for VS Code and Claude
/// Code, `streamable-http` and `streamableHttp` for other hosts.
const REMOTE_TYPES: &[&str] = &["http", "streamable-http", "streamableHttp"];

/// A Streamable HTTP server: `url` and `headers`, variables expanded in
/// both. Every header value is a [`Secret`], since headers hold tokens.
fn remote_server(
    ctx: &Context<'_>,
    key: &str,
    name: &str,
    entry: &Map<String, Value>,
) -> Result<Outcome, ConfigFileError> {
    if !cfg!(feature = "http") {
        return Ok(Outcome::Unsupported(
            "a Streamable HTTP server: this build has no `http` feature".into(),
        ));
    }
    let field = |f: &str| format!("{key}.{f}");
    let url = entry
        .get("url")
        .ok_or_else(|| ctx.invalid(&field("url"), "missing"))?;
    // The URL may hold a token from the environment: logs show it without
    // credentials or query (`HttpOptions::display_url`).
    let url = ctx.string(&field("url"), url)?.0;
    let mut http = crate::client::HttpOptions::new(url);
    if let Some(h) = entry.get("headers") {
        let headers_key = field("headers");
        let h = h
            .as_object()
            .ok_or_else(|| ctx.invalid(&headers_key, "must be an object of strings"))?;
        for (k, v) in h {
            let header_key = format!("{headers_key}.{k}");
            let raw = v
                .as_str()
                .ok_or_else(|| ctx.invalid(&header_key, "must be a string"))?;
            http = http.header(k.clone(), ctx.expand(&header_key, raw)?.0);
        }
    }
    let (mut config, serve) = options(ctx, &field(OPTIONS_KEY), entry.get(OPTIONS_KEY))?;
    config = config.name(name);
    config.transport = ClientTransport::Http(http);
    Ok(Outcome::Server(Box::new(config), serve))
}

/// Text as a [`Secret`] if part of it came from the environment, plain
/// otherwise.
fn keep(text: String, from_env: bool) -> MaybeSecret {
    if from_env {
        Secret::new(text).into()
    } else {
        MaybeSecret::Plain(text)
    }
}

/// `command`: a bare name stays, to be looked up in PATH; a relative path
/// is taken from the file's directory.
fn command_path(ctx: &Context<'_>, key: &str, v: &Value) -> Result<Arg, ConfigFileError> {
    let (command, from_env) = ctx.string(key, v)?;
    if Path::new(&command).components().count() > 1 {
        let path = ctx.resolve(Path::new(&command));
        return Ok(keep(path.to_string_lossy().into_owned(), from_env));
    }
    Ok(keep(command, from_env))
}

fn args(ctx: &Context<'_>, key: &str, v: Option<&Value>) -> Result<Vec<Arg>, ConfigFileError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let items = v
        .as_array()
        .ok_or_else(|| ctx.invalid(key, "must be an array of strings"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, a)| ctx.value(&format!("{key}[{i}]"), a))
        .collect()
}

/// `envFile`, every value a secret, then `env` over it. In `env`, a value
/// that came from the environment is a secret, a literal one plain. Linear in the
/// number of variables: a repeated name is resolved once, at the end.
fn environment(
    ctx: &Context<'_>,
    key: &str,
    entry: &Map<String, Value>,
) -> Result<Vec<(String, EnvValue)>, ConfigFileError> {
    let mut env: Vec<(String, EnvValue)> = Vec::new();
    if let Some(v) = entry.get("envFile") {
        let file_key = format!("{key}.envFile");
        // A path this process reads, not passed on: shown in errors.
        let (path, _) = ctx.path(&file_key, v)?;
        let text = read::read_text(&path, super::MAX_ENV_FILE_BYTES)
            .map_err(|p| ConfigFileError::unreadable(ctx.file, Some(&file_key), &path, p))?;
        let vars = env_file::parse(&text).map_err(|e| {
            let (line, problem) = e.into_parts();
            ConfigFileError::EnvFileSyntax {
                file: ctx.file.to_owned(),
                key: file_key.clone(),
                env_file: path.clone(),
                line,
                problem,
            }
        })?;
        env.extend(vars.into_iter().map(|(k, v)| (k, Secret::new(v).into())));
    }
    let mut own = Vec::new();
    if let Some(v) = entry.get("env") {
        let env_key = format!("{key}.env");
        let vars = v
            .as_object()
            .ok_or_else(|| ctx.invalid(&env_key, "must be an object of strings"))?;
        for (k, v) in vars {
            let var_key = format!("{env_key}.{k}");
            let raw = v
                .as_str()
                .ok_or_else(|| ctx.invalid(&var_key, "must be a string"))?;
            let (text, from_env) = ctx.expand(&var_key, raw)?;
            own.push((k.clone(), keep(text, from_env)));
        }
    }
    merge_env(&mut env, own);
    Ok(env)
}

/// The options key, read as a [`ClientConfig`] with every missing field at
/// its default, and as the gateway's options `tools` and `lazy`.
fn options(
    ctx: &Context<'_>,
    key: &str,
    v: Option<&Value>,
) -> Result<(ClientConfig, ServeOptions), ConfigFileError> {
    let Some(v) = v else {
        return Ok((
            crate::serde_support::client_defaults(),
            ServeOptions::default(),
        ));
    };
    let Value::Object(map) = v else {
        return Err(ctx.invalid(key, "must be an object"));
    };
    if let Some(k) = SET_BY_ENTRY.iter().find(|k| map.contains_key(**k)) {
        return Err(ctx.invalid(
            &format!("{key}.{k}"),
            "set in the server entry itself, not among the options",
        ));
    }
    let mut map = map.clone();
    let serve = serve_options(ctx, key, &mut map)?;
    let config =
        serde_json::from_value(Value::Object(map)).map_err(|e| ctx.invalid(key, e.to_string()))?;
    Ok((config, serve))
}

/// The `roots` option: `[{"uri": "file:///...", "name": "..."}]`.
fn roots_option(
    ctx: &Context<'_>,
    key: &str,
    v: Value,
) -> Result<Vec<crate::protocol::Root>, ConfigFileError> {
    let Value::Array(items) = v else {
        return Err(ctx.invalid(key, "must be an array of {\"uri\": ..., \"name\": ...}"));
    };
    let mut roots = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let item_key = format!("{key}[{i}]");
        let Value::Object(m) = item else {
            return Err(ctx.invalid(
                &item_key,
                "must be an object: {\"uri\": ..., \"name\": ...}",
            ));
        };
        let mut root = crate::protocol::Root::default();
        for (k, v) in m {
            match (k.as_str(), v) {
                ("uri", Value::String(u)) => root.uri = u,
                ("name", Value::String(n)) => root.name = Some(n),
                ("uri" | "name", _) => {
                    return Err(ctx.invalid(&format!("{item_key}.{k}"), "must be a string"))
                }
                _ => {
                    return Err(ctx.invalid(
                        &format!("{item_key}.{k}"),
                        "unknown field: expected uri or name",
                    ))
                }
            }
        }
        if root.uri.is_empty() {
            return Err(ctx.invalid(&format!("{item_key}.uri"), "missing or empty"));
        }
        roots.push(root);
    }
    Ok(roots)
}

/// Takes the host's and the gateway's options out of the options object:
/// `tools.allow`, `tools.deny`, `lazy`, `roots`, `revive_after_ms`.
fn serve_options(
    ctx: &Context<'_>,
    key: &str,
    map: &mut Map<String, Value>,
) -> Result<ServeOptions, ConfigFileError> {
    let mut serve = ServeOptions::default();
    match map.remove("lazy") {
        None => {}
        Some(Value::Bool(b)) => serve.lazy = b,
        Some(_) => return Err(ctx.invalid(&format!("{key}.lazy"), "must be true or false")),
    }
    if let Some(roots) = map.remove("roots") {
        serve.roots = roots_option(ctx, &format!("{key}.roots"), roots)?;
    }
    match map.remove("revive_after_ms") {
        None => {}
        Some(v) => match v.as_u64() {
            Some(ms) => serve.revive_after = Some(std::time::Duration::from_millis(ms)),
            None => {
                return Err(ctx.invalid(
                    &format!("{key}.revive_after_ms"),
                    "must be a whole number of milliseconds (0: never)",
                ))
            }
        },
    }
    let Some(tools) = map.remove("tools") else {
        return Ok(serve);
    };
    let tools_key = format!("{key}.tools");
    let Value::Object(tools) = tools else {
        return Err(ctx.invalid(
            &tools_key,
            "must be an object: {\"allow\": [...], \"deny\": [...]}",
        ));
    };
    for (k, v) in tools {
        let list_key = format!("{tools_key}.{k}");
        let target = match k.as_str() {
            "allow" => &mut serve.tools_allow,
            "deny" => &mut serve.tools_deny,
            _ => return Err(ctx.invalid(&list_key, "unknown field: expected allow or deny")),
        };
        let Value::Array(items) = v else {
            return Err(ctx.invalid(&list_key, "must be an array of glob patterns"));
        };
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(p) if !p.is_empty() => target.push(p.to_owned()),
                _ => {
                    return Err(ctx.invalid(
                        &format!("{list_key}[{i}]"),
                        "must be a non-empty glob pattern",
                    ))
                }
            }
        }
    }
    Ok(serve)
}
