//! What a config file makes this process read: the file itself and its
//! `envFile`s. A path there can name a device (`/dev/zero`), a FIFO or a
//! huge file: the read is bounded in bytes, never blocks, and the env file
//! is parsed in linear time. Regression tests of issue 20, item 15; each
//! prints the figure it measures (`--nocapture`).

mod common;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use conduit_mcp::config_file::{ConfigFileError, ServersFile};

use common::figure;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A config file with one server whose `envFile` is `env_file`.
fn config_with_env_file(dir: &Path, env_file: &Path) -> PathBuf {
    let text = serde_json::json!({
        "mcpServers": { "s": { "command": "x", "envFile": env_file } }
    });
    write(dir, "mcp.json", &text.to_string())
}

/// Runs `ServersFile::load(path)` on a thread; `None` if it has not
/// returned within `limit` (the thread is left blocked: the test fails).
fn load_within(path: &Path, limit: Duration) -> Option<Result<ServersFile, ConfigFileError>> {
    let (tx, rx) = mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(ServersFile::load(path));
    });
    rx.recv_timeout(limit).ok()
}

#[test]
fn a_config_file_or_env_file_at_dev_zero_is_refused_with_memory_bounded() {
    let dir = common::tempdir("cfg-dev-zero");
    let hwm_before = common::status_kib("VmHWM");
    let t = Instant::now();
    let as_config = load_within(Path::new("/dev/zero"), Duration::from_secs(20))
        .expect("loading /dev/zero returned");
    let config = config_with_env_file(&dir, Path::new("/dev/zero"));
    let as_env_file =
        load_within(&config, Duration::from_secs(20)).expect("loading its envFile returned");
    let elapsed = t.elapsed();
    let grew_mib = (common::status_kib("VmHWM").saturating_sub(hwm_before)) as f64 / 1024.0;
    let as_config = as_config.expect_err("/dev/zero is no config file");
    let as_env_file = as_env_file.expect_err("/dev/zero is no env file");
    figure(
        "config file and envFile at /dev/zero",
        format!("{as_config}; {as_env_file}; {elapsed:.1?}; peak RSS growth {grew_mib:.1} MiB"),
    );
    assert!(
        matches!(&as_config, ConfigFileError::NotAFile { kind, .. } if kind.contains("device")),
        "{as_config:?}"
    );
    match &as_env_file {
        ConfigFileError::NotAFile { key, path, .. } => {
            assert_eq!(key.as_deref(), Some("mcpServers.s.envFile"));
            assert_eq!(path, Path::new("/dev/zero"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        grew_mib < 64.0,
        "reading /dev/zero grew the process by {grew_mib:.1} MiB"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_fifo_as_config_file_or_env_file_is_refused_at_once() {
    let dir = common::tempdir("cfg-fifo");
    let fifo = dir.join("fifo");
    common::mkfifo(&fifo);
    let config = config_with_env_file(&dir, &fifo);
    let t = Instant::now();
    let as_config = load_within(&fifo, Duration::from_secs(5));
    let as_env_file = load_within(&config, Duration::from_secs(5));
    let elapsed = t.elapsed();
    figure(
        "config file and envFile at a FIFO nobody writes",
        format!(
            "config: {}; envFile: {}; {elapsed:.1?}",
            as_config
                .as_ref()
                .map_or("blocked for 5 s".into(), |r| format!(
                    "{:?}",
                    r.as_ref().err()
                )),
            as_env_file
                .as_ref()
                .map_or("blocked for 5 s".into(), |r| format!(
                    "{:?}",
                    r.as_ref().err()
                )),
        ),
    );
    let as_config = as_config.expect("reading a FIFO config file blocked");
    let as_env_file = as_env_file.expect("reading a FIFO env file blocked");
    assert!(
        matches!(&as_config, Err(ConfigFileError::NotAFile { kind, .. }) if *kind == "FIFO"),
        "{as_config:?}"
    );
    assert!(
        matches!(&as_env_file, Err(ConfigFileError::NotAFile { key: Some(_), kind, .. }) if *kind == "FIFO"),
        "{as_env_file:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `Host::load` is async: a FIFO `envFile` must not hold the runtime's
/// only thread (a timer on the same runtime keeps firing).
#[test]
fn host_load_of_a_fifo_env_file_never_blocks_the_runtime() {
    let dir = common::tempdir("cfg-fifo-host");
    let fifo = dir.join("fifo");
    common::mkfifo(&fifo);
    let config = config_with_env_file(&dir, &fifo);
    let r = common::on_own_runtime(Duration::from_secs(10), || async move {
        let r = tokio::time::timeout(
            Duration::from_secs(3),
            conduit_mcp::host::Host::load(&config),
        );
        r.await.map(|r| r.map(|_| ()).map_err(|e| e.to_string()))
    });
    figure("Host::load with a FIFO envFile", format!("{r:?}"));
    let r = r.expect("Host::load blocked the runtime's thread");
    let e = r
        .expect("Host::load returned before its timeout")
        .expect_err("a FIFO is no env file");
    assert!(e.contains("FIFO"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_oversize_config_or_env_file_is_refused_with_its_size_and_the_limit() {
    let dir = common::tempdir("cfg-oversize");
    // Sparse: 1 GiB long, no disk blocks.
    let big = dir.join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let hwm_before = common::status_kib("VmHWM");
    let t = Instant::now();
    let as_config = load_within(&big, Duration::from_secs(60)).expect("returned");
    let config = config_with_env_file(&dir, &big);
    let as_env_file = load_within(&config, Duration::from_secs(60)).expect("returned");
    let elapsed = t.elapsed();
    let grew_mib = (common::status_kib("VmHWM").saturating_sub(hwm_before)) as f64 / 1024.0;
    figure(
        "1 GiB config file and envFile",
        format!(
            "{:?}; {:?}; {elapsed:.1?}; peak RSS growth {grew_mib:.1} MiB",
            as_config.as_ref().err(),
            as_env_file.as_ref().err()
        ),
    );
    match as_config {
        Err(ConfigFileError::TooLarge { bytes, limit, .. }) => {
            assert_eq!(bytes, 1 << 30);
            assert_eq!(limit, conduit_mcp::config_file::MAX_CONFIG_FILE_BYTES);
        }
        other => panic!("{other:?}"),
    }
    match as_env_file {
        Err(ConfigFileError::TooLarge {
            bytes, limit, key, ..
        }) => {
            assert_eq!(bytes, 1 << 30);
            assert_eq!(limit, conduit_mcp::config_file::MAX_ENV_FILE_BYTES);
            assert_eq!(key.as_deref(), Some("mcpServers.s.envFile"));
        }
        other => panic!("{other:?}"),
    }
    assert!(grew_mib < 64.0, "grew {grew_mib:.1} MiB");
    let _ = std::fs::remove_dir_all(dir);
}

/// Parses a config whose env file has `lines` distinct variables (`Ab3=`,
/// 5 bytes a line, so 200,000 fit in the 1 MiB limit); the time it took,
/// or `None` past `limit`.
fn parse_env_file_of(dir: &Path, lines: usize, limit: Duration) -> Option<Duration> {
    const DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let n = DIGITS.len();
    assert!(lines <= n * n * n);
    let mut text = String::with_capacity(lines * 5);
    for i in 0..lines {
        for d in [i / (n * n), (i / n) % n, i % n] {
            text.push(char::from(DIGITS[d]));
        }
        text.push_str("=\n");
    }
    let env_file = write(dir, &format!("{lines}.env"), &text);
    let config = config_with_env_file(dir, &env_file);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let t = Instant::now();
        let file = ServersFile::load(&config).expect("loads");
        let n = file
            .server("s")
            .unwrap()
            .transport
            .as_stdio()
            .unwrap()
            .env
            .len();
        let _ = tx.send((t.elapsed(), n));
    });
    let (took, n) = rx.recv_timeout(limit).ok()?;
    assert_eq!(n, lines, "every variable read");
    Some(took)
}

/// 40,000 and 200,000 lines: linear time means about 5 times as long for 5
/// times the lines (quadratic: 25 times). Before the fix: 40 k lines took
/// seconds and 200 k lines over a minute.
#[test]
fn an_env_file_is_parsed_in_linear_time() {
    let dir = common::tempdir("cfg-env-linear");
    let limit = Duration::from_secs(20);
    let small = parse_env_file_of(&dir, 40_000, limit);
    let large = parse_env_file_of(&dir, 200_000, limit);
    figure(
        "envFile of 40,000 / 200,000 variables parsed",
        format!("{small:.2?} / {large:.2?} (None: not done within {limit:?})"),
    );
    // Linear in a debug build takes well under a second, quadratic over a
    // minute: the 20 s limit is generous and still fails a quadratic parse.
    large.expect("200,000 lines parsed within 20 s");
    assert!(small.is_some());
    let _ = std::fs::remove_dir_all(dir);
}
