//! `--config FILE`: the servers of a config file. One server, by
//! `--server` or the file's only one, runs as after `--`; `tools`, `call
//! server__tool`, `prompts`, `prompt server__name`, `resources`, `read URI`
//! and `servers` run a [`Host`] of several.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::args::{Command, Options};
use super::progress::ProgressView;
use super::{apply_options, host_failure, interrupted, one_server, Fail, Output};
use crate::client::RequestOptions;
use crate::client::Status;
use crate::config_file::ServersFile;
use crate::host::{Host, HostConfig, ItemKind, ServerSummary};

/// Runs `command` against the servers of `file`.
pub(super) async fn run(
    options: &Options,
    file: ServersFile,
    command: Command,
) -> Result<Output, Fail> {
    let mut host = HostConfig::from_file(&file).map_err(|e| Fail::Usage(e.to_string()))?;
    for config in host.servers.values_mut() {
        apply_options(options, config);
    }
    if let Some(t) = options.timeout() {
        host = host.ready_timeout(t);
    }
    match command {
        Command::Servers => servers(options, &file, host).await,
        Command::Tools if options.server().is_none() => {
            skipped(&file);
            all_tools(options, host).await
        }
        Command::Call { tool, args, .. } if options.server().is_none() => {
            let args = args.unwrap_or_else(|| json!({}));
            call(options, &file, host, &tool, args).await
        }
        Command::Prompts if options.server().is_none() => {
            skipped(&file);
            all_items(options, host, "prompts").await
        }
        Command::Resources if options.server().is_none() => {
            skipped(&file);
            all_items(options, host, "resources").await
        }
        Command::Prompt { name, args } if options.server().is_none() => {
            let args = args.unwrap_or_else(|| json!({}));
            prompt(options, &file, host, &name, args).await
        }
        Command::Read { uri } if options.server().is_none() => {
            let r = with_host(options, host, async |host: &Host| {
                let r = host.read_resource(&uri).await.map_err(host_failure)?;
                serde_json::to_value(r).map_err(|e| Fail::Transport(e.to_string()))
            })
            .await?;
            Ok(r.into())
        }
        command => {
            let name = one_server(options, &file)?;
            let config = host
                .servers
                .remove(&name)
                .ok_or_else(|| unknown(&file, &name))?;
            one_server::with_client(options, config, command).await
        }
    }
}

/// Says on stderr which entries of `file` are not served, and why. The
/// output on stdout stays one JSON document.
fn skipped(file: &ServersFile) {
    for name in &file.disabled {
        eprintln!("mcp: skipped {name}: disabled");
    }
    for u in &file.unsupported {
        eprintln!("mcp: skipped {}: {}", u.name, u.reason);
    }
}

/// `--server NAME`, or the file's only server.
fn one_server(options: &Options, file: &ServersFile) -> Result<String, Fail> {
    if let Some(name) = options.server() {
        return Ok(name.clone());
    }
    let mut names = file.servers.keys();
    match (names.next(), names.next()) {
        (Some(only), None) => Ok(only.clone()),
        _ => Err(Fail::Usage(format!(
            "{} has {} servers ({}); choose one with --server NAME",
            file.path.display(),
            file.servers.len(),
            server_names(file)
        ))),
    }
}

fn server_names(file: &ServersFile) -> String {
    let names: Vec<&str> = file.servers.keys().map(String::as_str).collect();
    if names.is_empty() {
        "none to start".into()
    } else {
        names.join(", ")
    }
}

pub(super) fn unknown(file: &ServersFile, name: &str) -> Fail {
    let why = if file.disabled.iter().any(|d| d == name) {
        "is disabled".to_owned()
    } else if let Some(u) = file.unsupported.iter().find(|u| u.name == name) {
        format!("is not supported: {}", u.reason)
    } else {
        format!("is not in the file (servers: {})", server_names(file))
    };
    Fail::Usage(format!("server `{name}` {why}"))
}

/// Starts a host of `config`, runs `work` on it or stops at Ctrl-C, then
/// stops every server and waits until their processes are gone.
async fn with_host<T>(
    options: &Options,
    mut config: HostConfig,
    work: impl AsyncFnOnce(&Host) -> Result<T, Fail>,
) -> Result<T, Fail> {
    if options.verbose() {
        config.servers.values().for_each(super::verbose::server);
    }
    // Protected servers: logged in to first, one at a time.
    super::login::authorize_all(options, &mut config.servers).await?;
    let host = tokio::select! {
        h = Host::start(config) => h.map_err(host_failure)?,
        f = interrupted() => return Err(f),
    };
    let outcome = tokio::select! {
        r = work(&host) => r,
        f = interrupted() => Err(f),
    };
    for server in host.stop().wait().await {
        for r in server.reports.iter().filter(|r| r.group_survivors) {
            eprintln!(
                "mcp: warning: processes of server {}'s group {} outlived the shutdown",
                server.name, r.pid
            );
        }
    }
    outcome
}

/// `mcp servers`: one line per server.
async fn servers(
    options: &Options,
    file: &ServersFile,
    mut config: HostConfig,
) -> Result<Output, Fail> {
    if let Some(name) = options.server() {
        let one = config
            .servers
            .remove(name)
            .ok_or_else(|| unknown(file, name))?;
        config.servers = [(name.clone(), one)].into();
    }
    let summaries = with_host(options, config, async |host: &Host| Ok(host.servers())).await?;
    let width = summaries
        .iter()
        .map(|s| s.name.len())
        .chain(file.disabled.iter().map(String::len))
        .chain(file.unsupported.iter().map(|u| u.name.len()))
        .max()
        .unwrap_or(0);
    let mut lines: Vec<String> = summaries.iter().map(|s| server_line(s, width)).collect();
    if options.server().is_none() {
        lines.extend(
            file.disabled
                .iter()
                .map(|d| format!("{d:width$}  disabled")),
        );
        lines.extend(
            file.unsupported
                .iter()
                .map(|u| format!("{:width$}  unsupported: {}", u.name, u.reason)),
        );
    }
    Ok(Output::Lines {
        lines,
        all_ready: summaries.iter().all(ServerSummary::is_ready),
    })
}

/// `name  era  version  N tools  ready in T ms`, or `name  error: ...`.
fn server_line(s: &ServerSummary, width: usize) -> String {
    let mut line = format!("{:width$}  ", s.name);
    match (s.session(), s.is_ready()) {
        (Some(session), true) => {
            let era = session.era.as_str();
            let _ = write!(
                line,
                "{era:6}  {:10}  {:>3} tools  ready in {} ms",
                session.protocol_version,
                s.tools,
                s.ready_after.map_or(0, |d| d.as_millis())
            );
            if let Some(e) = &s.list_error {
                let _ = write!(line, "  (warning: {e})");
            }
        }
        _ => {
            let _ = write!(line, "error: {}", not_ready(s));
        }
    }
    line
}

fn not_ready(s: &ServerSummary) -> String {
    match &s.status {
        Status::GaveUp(reason) => reason.clone(),
        Status::Ready(_) => "ready, but its tools could not be listed in time".into(),
        Status::Starting => "not ready in time (still starting)".into(),
        Status::Restarting { reason, .. } => format!("not ready: {reason}"),
        Status::Stopped => "stopped".into(),
    }
}

/// `mcp tools --config FILE`: every server's tools, namespaced.
async fn all_tools(options: &Options, config: HostConfig) -> Result<Output, Fail> {
    all_items(options, config, "tools").await
}

/// `mcp tools|prompts|resources --config FILE`: every server's items of
/// `kind`, each with its server, and, for tools and prompts, its
/// namespaced name.
async fn all_items(
    options: &Options,
    config: HostConfig,
    kind: &'static str,
) -> Result<Output, Fail> {
    let item_kind = match kind {
        "tools" => ItemKind::Tool,
        "prompts" => ItemKind::Prompt,
        _ => ItemKind::Resource,
    };
    let (items, collisions, failed) = with_host(options, config, async |host: &Host| {
        let failed: Vec<ServerSummary> = host
            .servers()
            .into_iter()
            .filter(|s| !s.is_ready())
            .collect();
        let items: Vec<Value> = match kind {
            "tools" => host
                .tools()
                .into_iter()
                .map(|t| json!({ "name": t.name, "server": t.server, "tool": t.tool }))
                .collect(),
            "prompts" => host
                .prompts()
                .into_iter()
                .map(|p| json!({ "name": p.name, "server": p.server, "prompt": p.prompt }))
                .collect(),
            _ => host
                .resources()
                .into_iter()
                .map(|r| json!({ "uri": r.uri, "server": r.server, "resource": r.resource }))
                .collect(),
        };
        // Only the collisions of what was asked for.
        let collisions: Vec<_> = host
            .collisions()
            .into_iter()
            .filter(|c| c.kind == item_kind)
            .collect();
        Ok((items, collisions, failed))
    })
    .await?;
    for c in &collisions {
        eprintln!("mcp: warning: {c}");
    }
    if failed.is_empty() {
        return Ok(json!({ kind: items }).into());
    }
    // The items of the servers that are ready, and an error for the others.
    let mut out = std::io::stdout().lock();
    let _ = super::print_json(&mut out, &json!({ kind: items }));
    let errors: Vec<String> = failed
        .iter()
        .map(|s| format!("server {}: {}", s.name, not_ready(s)))
        .collect();
    Err(Fail::Transport(errors.join("\nerror: ")))
}

/// Keeps in `config` only the servers the namespaced `name` of a `kind`
/// can belong to; a usage error when there is none.
fn keep_owners(
    file: &ServersFile,
    config: &mut HostConfig,
    kind: &str,
    name: &str,
) -> Result<(), Fail> {
    let naming = config.naming();
    config
        .servers
        .retain(|server, _| name.starts_with(&naming.prefix(server)));
    if config.servers.is_empty() {
        return Err(Fail::Usage(format!(
            "no {kind} named `{name}`: a namespaced name starts with a server's name and `{}` (servers: {}); or use --server NAME with the server's own {kind} name",
            config.get_separator(),
            server_names(file)
        )));
    }
    Ok(())
}

/// `mcp call server__tool`: starts the servers the name can belong to,
/// and calls through the host's namespace.
async fn call(
    options: &Options,
    file: &ServersFile,
    mut config: HostConfig,
    tool: &str,
    args: Value,
) -> Result<Output, Fail> {
    keep_owners(file, &mut config, "tool", tool)?;
    let result = with_host(options, config, async |host: &Host| {
        let mut opts = RequestOptions::new();
        if let Some(t) = options.timeout() {
            opts = opts.timeout(t);
        }
        let result = if options.progress() {
            let (opts, view) = ProgressView::attach(opts);
            let r = host.call_tool_with(tool, args, opts).await;
            view.finish().await;
            r
        } else {
            host.call_tool_with(tool, args, opts).await
        };
        let result = result.map_err(host_failure)?;
        serde_json::to_value(result).map_err(|e| Fail::Transport(e.to_string()))
    })
    .await?;
    Ok(result.into())
}

/// `mcp prompt server__name`: starts the servers the name can belong to,
/// and gets the prompt through the host's namespace.
async fn prompt(
    options: &Options,
    file: &ServersFile,
    mut config: HostConfig,
    name: &str,
    args: Value,
) -> Result<Output, Fail> {
    keep_owners(file, &mut config, "prompt", name)?;
    let result = with_host(options, config, async |host: &Host| {
        let r = host.get_prompt(name, args).await.map_err(host_failure)?;
        serde_json::to_value(r).map_err(|e| Fail::Transport(e.to_string()))
    })
    .await?;
    Ok(result.into())
}
