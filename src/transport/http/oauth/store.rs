//! Where authorization lives between requests and between runs: the
//! [`TokenStore`] trait, [`MemoryStore`] (the default) and [`FileStore`]
//! (one JSON file written with mode 0600, as the `mcp` command keeps it).
//!
//! A record is keyed by the server (its URL without query) and binds the
//! client registration and the tokens to the authorization server that
//! issued them: when a server moves to another authorization server, the
//! record is dropped, never presented there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TokenAuthMethod {
    /// HTTP Basic with the client id and secret.
    ClientSecretBasic,
    /// The client id and secret in the request body.
    ClientSecretPost,
    /// A public client: the client id alone.
    None,
}

impl TokenAuthMethod {
    /// The OAuth name (`client_secret_basic`, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::TokenAuthMethod;
    ///
    /// assert_eq!(TokenAuthMethod::ClientSecretPost.as_str(), "client_secret_post");
    /// assert_eq!(TokenAuthMethod::None.as_str(), "none");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::None => "none",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "client_secret_basic" => Some(Self::ClientSecretBasic),
            "client_secret_post" => Some(Self::ClientSecretPost),
            "none" => Some(Self::None),
            _ => None,
        }
    }
}

/// The client's identity at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegisteredClient {
    /// The client id (a URL for a client metadata document).
    pub client_id: String,
    /// The secret, for a confidential client.
    pub client_secret: Option<Secret>,
    /// How it authenticates at the token endpoint.
    pub auth_method: TokenAuthMethod,
    /// The redirect URI it was registered with (dynamic registration).
    pub redirect_uri: Option<String>,
}

impl RegisteredClient {
    /// A client id (and secret) registered with the authorization server
    /// out of band; with a secret it authenticates with
    /// `client_secret_basic` unless the server supports only
    /// `client_secret_post`.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{RegisteredClient, TokenAuthMethod};
    /// use conduit_mcp::Secret;
    ///
    /// let public = RegisteredClient::new("my-app", None);
    /// assert_eq!(public.auth_method, TokenAuthMethod::None);
    /// let confidential = RegisteredClient::new("my-app", Some(Secret::new("s3cr3t")));
    /// assert_eq!(confidential.auth_method, TokenAuthMethod::ClientSecretBasic);
    /// ```
    pub fn new(client_id: impl Into<String>, client_secret: Option<Secret>) -> Self {
        let auth_method = if client_secret.is_some() {
            TokenAuthMethod::ClientSecretBasic
        } else {
            TokenAuthMethod::None
        };
        Self {
            client_id: client_id.into(),
            client_secret,
            auth_method,
            redirect_uri: None,
        }
    }
}

/// Tokens from one authorization.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tokens {
    /// Sent as `Authorization: Bearer`.
    pub access_token: Secret,
    /// Exchanged for a new access token when it is refused.
    pub refresh_token: Option<Secret>,
    /// When the access token expires (seconds since the Unix epoch).
    pub expires_at: Option<u64>,
    /// The scopes granted (or, when the server did not say, requested).
    pub scope: Option<String>,
}

impl Tokens {
    pub(crate) fn expires_in(secs: Option<Duration>) -> Option<u64> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        Some(now.as_secs().saturating_add(secs?.as_secs()))
    }
}

/// What is kept for one server: the authorization server it was obtained
/// from, the client registered there, and the tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredAuth {
    /// The authorization server's issuer identifier (`None`: a server of
    /// the 2025-03-26 revision without metadata, its own authorization
    /// server).
    pub issuer: Option<String>,
    /// The client registered with it.
    pub client: Option<RegisteredClient>,
    /// The tokens it issued.
    pub tokens: Option<Tokens>,
}

/// Keeps authorization between requests and runs. Called on a blocking
/// thread (never on the runtime's workers), so a file or keychain may be
/// used synchronously. Errors are strings said in [`AuthError::Store`](super::AuthError::Store):
/// they must not contain secrets.
pub trait TokenStore: Send + Sync + 'static {
    /// The record for `server`, if any.
    fn load(&self, server: &str) -> Result<Option<StoredAuth>, String>;
    /// Replaces the record for `server`.
    fn save(&self, server: &str, auth: &StoredAuth) -> Result<(), String>;
}

/// Keeps records in memory, for the life of the process (the default).
#[derive(Debug, Default)]
pub struct MemoryStore {
    records: Mutex<HashMap<String, StoredAuth>>,
}

impl MemoryStore {
    /// An empty store.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{MemoryStore, StoredAuth, TokenStore};
    ///
    /// let store = MemoryStore::new();
    /// assert_eq!(store.load("https://mcp.example.com/mcp")?, None);
    /// let mut auth = StoredAuth::default();
    /// auth.issuer = Some("https://auth.example.com".into());
    /// store.save("https://mcp.example.com/mcp", &auth)?;
    /// assert_eq!(store.load("https://mcp.example.com/mcp")?, Some(auth));
    /// # Ok::<(), String>(())
    /// ```
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, server: &str) -> Result<Option<StoredAuth>, String> {
        let map = self.records.lock().unwrap_or_else(|p| p.into_inner());
        Ok(map.get(server).cloned())
    }

    fn save(&self, server: &str, auth: &StoredAuth) -> Result<(), String> {
        let mut map = self.records.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(server.to_owned(), auth.clone());
        Ok(())
    }
}

/// Keeps records in one JSON file, readable by its owner only (created
/// with mode 0600 on Unix and rewritten whole, through a temporary file
/// of the same mode renamed over it). The file holds the tokens and
/// client secrets in clear: its permissions are the protection.
///
/// Several stores (in this process or in others, such as two `mcp`
/// commands) may share the file: on Unix each save reads, changes and
/// rewrites it holding an exclusive advisory lock (`flock`) on
/// `<file>.lock` beside it (mode 0600, left in place), waiting at most
/// 10 s for another save, so none loses another's records; a reader sees
/// the old file or the new one, never a part.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    /// Serialises read-modify-write cycles within the process.
    lock: Mutex<()>,
}

/// Largest token file read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// How long a save waits for another one's lock on the file.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Temporary files of this process, told apart.
static TMP_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The lock on a token file: released when the file is closed (dropped).
struct FileLock {
    _file: Option<std::fs::File>,
}

impl FileStore {
    /// A store in `path` (created on the first save, with its directory).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::oauth::{FileStore, StoredAuth, TokenStore};
    ///
    /// let dir = std::env::temp_dir().join(format!("conduit-doc-{}", std::process::id()));
    /// let store = FileStore::new(dir.join("tokens.json"));
    /// let mut auth = StoredAuth::default();
    /// auth.issuer = Some("https://auth.example.com".into());
    /// store.save("https://mcp.example.com/mcp", &auth)?; // creates the directory and file
    /// assert_eq!(store.load("https://mcp.example.com/mcp")?, Some(auth));
    /// assert!(store.path().is_file());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), String>(())
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_all(&self) -> Result<HashMap<String, FileRecord>, String> {
        let shown = self.path.display();
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
            Err(e) => return Err(format!("{shown}: {e}")),
        };
        if !meta.is_file() {
            return Err(format!("{shown} is not a regular file"));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(format!("{shown} is over {MAX_FILE_BYTES} bytes"));
        }
        let text = std::fs::read(&self.path).map_err(|e| format!("{shown}: {e}"))?;
        serde_json::from_slice(&text).map_err(|e| format!("{shown} is not a token file: {e}"))
    }

    /// `<file><suffix>` beside the file.
    fn beside(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(suffix);
        self.path.with_file_name(name)
    }

    fn make_dir(&self) -> Result<(), String> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        Ok(())
    }

    /// Takes the exclusive lock of the file (see the type's docs). A file
    /// system that has no locks gets none, with a warning.
    #[cfg(unix)]
    fn lock_file(&self) -> Result<FileLock, String> {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        self.make_dir()?;
        let path = self.beside(".lock");
        let shown = path.display();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("{shown}: {e}"))?;
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_millis(1);
        loop {
            // SAFETY: flock on a descriptor this function owns (the file
            // lives until the lock is dropped); no memory is involved.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(FileLock { _file: Some(file) });
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EWOULDBLOCK) | Some(libc::EINTR) => {}
                Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => {
                    tracing::warn!(file = %shown, error = %e, "no file locks here: the token file is rewritten without one");
                    return Ok(FileLock { _file: None });
                }
                _ => return Err(format!("{shown}: {e}")),
            }
            if std::time::Instant::now() >= deadline {
                return Err(format!(
                    "{shown} stayed locked by another writer for {} s",
                    LOCK_WAIT.as_secs()
                ));
            }
            // A blocking thread (see TokenStore): a short pause is fine.
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    #[cfg(not(unix))]
    fn lock_file(&self) -> Result<FileLock, String> {
        Ok(FileLock { _file: None })
    }

    fn write_all(&self, map: &HashMap<String, FileRecord>) -> Result<(), String> {
        let shown = self.path.display();
        self.make_dir()?;
        let text = serde_json::to_vec_pretty(map).map_err(|e| format!("{shown}: {e}"))?;
        let seq = TMP_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self.beside(&format!(".tmp{}-{seq}", std::process::id()));
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let written = (|| {
            use std::io::Write;
            let mut f = opts.open(&tmp)?;
            // An existing temporary file keeps its mode: set it again.
            #[cfg(unix)]
            std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
            f.write_all(&text)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map_err(|e| format!("{shown}: {e}"))
    }
}

impl TokenStore for FileStore {
    fn load(&self, server: &str) -> Result<Option<StoredAuth>, String> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        Ok(self.read_all()?.remove(server).map(FileRecord::into_auth))
    }

    fn save(&self, server: &str, auth: &StoredAuth) -> Result<(), String> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let _file = self.lock_file()?;
        let mut map = self.read_all()?;
        map.insert(server.to_owned(), FileRecord::from_auth(auth));
        self.write_all(&map)
    }
}

/// The file's form of a record: the secrets in clear (a [`Secret`]
/// serialises redacted everywhere else).
#[derive(Serialize, Deserialize)]
struct FileRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    issuer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client: Option<FileClient>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens: Option<FileTokens>,
}

#[derive(Serialize, Deserialize)]
struct FileClient {
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    auth_method: TokenAuthMethod,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redirect_uri: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct FileTokens {
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
}

impl FileRecord {
    fn from_auth(a: &StoredAuth) -> Self {
        Self {
            issuer: a.issuer.clone(),
            client: a.client.as_ref().map(|c| FileClient {
                client_id: c.client_id.clone(),
                client_secret: c.client_secret.as_ref().map(|s| s.expose().to_owned()),
                auth_method: c.auth_method,
                redirect_uri: c.redirect_uri.clone(),
            }),
            tokens: a.tokens.as_ref().map(|t| FileTokens {
                access_token: t.access_token.expose().to_owned(),
                refresh_token: t.refresh_token.as_ref().map(|s| s.expose().to_owned()),
                expires_at: t.expires_at,
                scope: t.scope.clone(),
            }),
        }
    }

    fn into_auth(self) -> StoredAuth {
        StoredAuth {
            issuer: self.issuer,
            client: self.client.map(|c| RegisteredClient {
                client_id: c.client_id,
                client_secret: c.client_secret.map(Secret::new),
                auth_method: c.auth_method,
                redirect_uri: c.redirect_uri,
            }),
            tokens: self.tokens.map(|t| Tokens {
                access_token: Secret::new(t.access_token),
                refresh_token: t.refresh_token.map(Secret::new),
                expires_at: t.expires_at,
                scope: t.scope,
            }),
        }
    }
}
