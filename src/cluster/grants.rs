//! What a gateway lets other nodes do with one server: its grants.
//!
//! Nothing is granted unless named. Methods are granted by name, and a
//! call for any other method is refused with
//! [`RemoteError::Refused`](super::RemoteError::Refused). The server's
//! notifications and its session, with its pid, server info, instructions
//! and capabilities, are granted on their own, because a node that may call a
//! tool need not read either.

use std::collections::HashSet;

/// What other nodes may do with one exposed server, given to
/// [`GatewayConfig::expose`](super::GatewayConfig::expose).
///
/// ```
/// use conduit_mcp::cluster::Grants;
/// // Tools only: no other method, no notifications, no session.
/// let tools = Grants::methods(["tools/list", "tools/call"]);
/// // The same, and the server's notifications.
/// let watched = Grants::methods(["tools/list", "tools/call"]).notifications();
/// # let _ = (tools, watched);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// `None`: every method.
    methods: Option<HashSet<String>>,
    notifications: bool,
    session: bool,
}

impl Grants {
    /// Nothing: every call is refused. The server is still found by name.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::Grants;
    ///
    /// assert_eq!(Grants::none(), Grants::methods(Vec::<String>::new()));
    /// assert_ne!(Grants::none(), Grants::all());
    /// ```
    pub fn none() -> Self {
        Self {
            methods: Some(HashSet::new()),
            ..Self::default()
        }
    }

    /// These methods only; `tools/list` also covers
    /// [`list_tools`](super::RemoteServer::list_tools). No notifications,
    /// no session.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::Grants;
    ///
    /// let tools = Grants::methods(["tools/list", "tools/call"]);
    /// assert_ne!(tools, Grants::all());
    /// ```
    pub fn methods<I, S>(methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            methods: Some(methods.into_iter().map(Into::into).collect()),
            ..Self::default()
        }
    }

    /// Everything: every method, the notifications and the session. For a
    /// cluster whose every node you trust with the server.
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::Grants;
    ///
    /// let everything = Grants::all();
    /// assert_ne!(everything, Grants::methods(["tools/call"]).notifications().session());
    /// ```
    pub fn all() -> Self {
        Self {
            methods: None,
            notifications: true,
            session: true,
        }
    }

    /// Also the server's notifications, for
    /// [`RemoteServer::notifications`](super::RemoteServer::notifications).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::Grants;
    ///
    /// let watched = Grants::methods(["tools/call"]).notifications();
    /// assert_ne!(watched, Grants::methods(["tools/call"]));
    /// ```
    pub fn notifications(mut self) -> Self {
        self.notifications = true;
        self
    }

    /// Also the server's session, for
    /// [`RemoteServer::session`](super::RemoteServer::session).
    ///
    /// # Examples
    ///
    /// ```
    /// use conduit_mcp::cluster::Grants;
    ///
    /// let inspectable = Grants::methods(["tools/call"]).session(); // pid, server info, capabilities
    /// assert_ne!(inspectable, Grants::methods(["tools/call"]));
    /// ```
    pub fn session(mut self) -> Self {
        self.session = true;
        self
    }

    /// Whether `method` may be called.
    pub(crate) fn allows_method(&self, method: &str) -> bool {
        self.methods.as_ref().is_none_or(|m| m.contains(method))
    }

    /// Whether the notifications may be subscribed to.
    pub(crate) fn allows_notifications(&self) -> bool {
        self.notifications
    }

    /// Whether the session may be read.
    pub(crate) fn allows_session(&self) -> bool {
        self.session
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_granted_that_was_not_named() {
        let g = Grants::methods(["tools/call"]);
        assert!(g.allows_method("tools/call"));
        assert!(!g.allows_method("tools/list"));
        assert!(!g.allows_notifications() && !g.allows_session());
        let none = Grants::none();
        assert!(!none.allows_method("ping") && !none.allows_session());
        let all = Grants::all();
        assert!(
            all.allows_method("anything") && all.allows_notifications() && all.allows_session()
        );
        let more = Grants::methods(["ping"]).notifications().session();
        assert!(more.allows_notifications() && more.allows_session() && !more.allows_method("x"));
    }
}
