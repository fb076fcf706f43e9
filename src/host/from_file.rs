//! A config file's servers and options as a [`HostConfig`]: the host reads
//! what [`config_file`](crate::config_file) parsed, so that config files
//! know nothing of hosts.

use crate::config_file::{ConfigFileError, ServersFile, OPTIONS_KEY};

use super::HostConfig;

impl HostConfig {
    /// The host of a config file: its servers, each server's
    /// `conduit.revive_after_ms`, and the options under its top-level
    /// `conduit` key (the fields of this type's serialised form but
    /// `servers`; a misspelt one is an error naming it).
    ///
    /// ```no_run
    /// use conduit_mcp::config_file::ServersFile;
    /// use conduit_mcp::host::{Host, HostConfig};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let file = ServersFile::load(".mcp.json")?;
    /// let host = Host::start(HostConfig::from_file(&file)?).await?;
    /// # Ok(()) }
    /// ```
    pub fn from_file(file: &ServersFile) -> Result<HostConfig, ConfigFileError> {
        let options = serde_json::Value::Object(file.host_options.clone());
        let mut host: HostConfig =
            serde_json::from_value(options).map_err(|e| ConfigFileError::Invalid {
                file: file.path.clone(),
                key: OPTIONS_KEY.to_owned(),
                problem: e.to_string(),
            })?;
        host.servers = file.servers.clone();
        for (name, pause) in file
            .serve
            .iter()
            .filter_map(|(n, o)| Some((n, o.revive_after?)))
        {
            host = host.server_revive_after(name.clone(), pause);
        }
        Ok(host)
    }
}

impl TryFrom<&ServersFile> for HostConfig {
    type Error = ConfigFileError;

    fn try_from(file: &ServersFile) -> Result<Self, Self::Error> {
        HostConfig::from_file(file)
    }
}
