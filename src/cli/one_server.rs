//! One server: `discover`, `tools`, `call`, `request`, `resources`,
//! `read`, `prompts`, `prompt` against the server
//! after `--`, the Streamable HTTP server of `--url`, or one server of a
//! config file.

use std::ffi::OsString;

use serde_json::{json, Value};

use super::args::{Command, Options, SecretPair};
use super::{
    apply_options, failure, interrupted, send, with_options, Fail, Output, DEFAULT_TIMEOUT,
};
use crate::client::ClientConfig;
use crate::client::{Client, StartError};

/// Runs `command` against `server`, the command after `--`.
pub(super) async fn run(
    options: &Options,
    command: Command,
    server: Vec<OsString>,
) -> Result<Output, Fail> {
    let server = server
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| Fail::Usage(format!("the server command {a:?} is not UTF-8")))
        })
        .collect::<Result<Vec<String>, Fail>>()?;
    let Some((exe, args)) = server.split_first() else {
        return Err(Fail::Usage(
            "missing the server command: put it after `--` (or use --config FILE)".into(),
        ));
    };
    let mut exe = exe.clone();
    if exe.contains('/') {
        exe = super::args::absolute(&exe)
            .map_err(Fail::Usage)?
            .to_string_lossy()
            .into_owned();
    }
    let config = ClientConfig::new(exe).args(args);
    let mut config = config;
    apply_options(options, &mut config);
    with_client(options, config, command).await
}

/// Runs `command` against the Streamable HTTP server of `--url`.
pub(super) async fn run_url(options: &Options, command: Command) -> Result<Output, Fail> {
    let Some(url) = options.url() else {
        return Err(Fail::Usage("missing --url URL".into()));
    };
    let mut config = ClientConfig::http(url.clone());
    for header in options.header() {
        match header {
            SecretPair::Pair(k, v) => config = config.header(k.clone(), v.expose()),
            SecretPair::Bad(why) => return Err(Fail::Usage((*why).into())),
        }
    }
    apply_options(options, &mut config);
    // A bad configuration is a usage error, before any login.
    config.validate().map_err(|e| Fail::Usage(e.to_string()))?;
    with_client(options, config, command).await
}

/// Starts `config`, runs `command`, and stops the server, waiting until
/// its process is gone.
pub(super) async fn with_client(
    options: &Options,
    config: ClientConfig,
    command: Command,
) -> Result<Output, Fail> {
    if options.verbose() {
        super::verbose::server(&config);
    }
    // A protected server: logged in to first (or the kept token reused).
    let config = super::login::authorized(options, config).await?;
    let client = Client::start(config).await.map_err(|e| match e {
        StartError::Config(c) => Fail::Usage(c.to_string()),
        StartError::Spawn(s) => Fail::Usage(s.to_string()),
        e => Fail::Transport(e.to_string()),
    })?;
    let outcome = tokio::select! {
        r = execute(options, &client, command) => r,
        f = interrupted() => Err(f),
    };
    // Never leave a process behind: wait for the whole shutdown sequence.
    let reports = client.stop().wait().await;
    for r in &reports {
        tracing::debug!(?r, "server shut down");
        if r.group_survivors {
            eprintln!(
                "mcp: warning: processes of the server's group {} outlived the shutdown",
                r.pid
            );
        }
    }
    outcome.map(Output::Json)
}

async fn execute(options: &Options, client: &Client, command: Command) -> Result<Value, Fail> {
    let session = client
        .ready(options.timeout().unwrap_or(DEFAULT_TIMEOUT))
        .await
        .map_err(failure)?;
    match command {
        Command::Discover => Ok(session.to_json()),
        Command::Tools => list(options, client, "tools/list", "tools").await,
        Command::Call { tool, args, .. } => {
            let params = json!({ "name": tool, "arguments": args.unwrap_or_else(|| json!({})) });
            send(options, client, "tools/call", Some(params))
                .await
                .map_err(failure)
        }
        Command::Request { method, params, .. } => send(options, client, &method, params)
            .await
            .map_err(failure),
        Command::Resources => list(options, client, "resources/list", "resources").await,
        Command::Prompts => list(options, client, "prompts/list", "prompts").await,
        Command::Read { uri } => {
            let r = client.read_resource(&uri).await.map_err(failure)?;
            serde_json::to_value(r).map_err(|e| Fail::Transport(e.to_string()))
        }
        Command::Prompt { name, args } => {
            let args = args.unwrap_or_else(|| json!({}));
            let r = client.get_prompt(&name, args).await.map_err(failure)?;
            serde_json::to_value(r).map_err(|e| Fail::Transport(e.to_string()))
        }
        Command::Servers | Command::Serve(_) | Command::Completions { .. } => {
            Err(Fail::Usage("not a one-server subcommand".into()))
        }
    }
}

/// Every page of `method`, as `{key: [...]}`: the client's loop, with its
/// caps on pages, items and bytes.
async fn list(options: &Options, client: &Client, method: &str, key: &str) -> Result<Value, Fail> {
    let items = with_options(options, |opts| client.list_all_with(method, key, opts))
        .await
        .map_err(failure)?;
    Ok(json!({ key: items }))
}
