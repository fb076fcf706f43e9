//! A session's 2025-11-25 resource subscriptions (`resources/subscribe`), kept
//! with the session and bounded in bytes: a client chooses the URIs, so a
//! set without a bound is memory it can grow at will (100,000 subscriptions
//! of 1 KiB URIs held over 100 MiB, with the inbound budget at 4 MiB).

use std::collections::HashSet;

use serde_json::json;

use crate::jsonrpc::{codes, ErrorObject};

/// What one subscription is charged beyond its URI's bytes: the `String`
/// and its slot in the set.
pub(crate) const ENTRY_OVERHEAD: usize = 64;

/// The URIs one session subscribed to, and the bytes they are charged.
#[derive(Debug, Default, Clone)]
pub(crate) struct Subscriptions {
    uris: HashSet<String>,
    bytes: usize,
}

/// A subscription the session's bound cannot afford.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "this session's subscriptions would exceed max_subscription_bytes ({limit} bytes: \
     {held} held, {needed} more needed); unsubscribe from some first"
)]
pub(crate) struct SubscriptionsFull {
    limit: usize,
    held: usize,
    needed: usize,
}

impl SubscriptionsFull {
    /// The JSON-RPC error answered for the refused `resources/subscribe`:
    /// -32602, naming the bound in the message and in `data`.
    pub(crate) fn to_error_object(self) -> ErrorObject {
        ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("resources/subscribe refused: {self}"),
        )
        .with_data(json!({
            "limit": "max_subscription_bytes",
            "maxBytes": self.limit,
            "heldBytes": self.held,
            "neededBytes": self.needed,
        }))
    }
}

fn cost(uri: &str) -> usize {
    uri.len().saturating_add(ENTRY_OVERHEAD)
}

impl Subscriptions {
    /// Adds `uri` unless that would take the charge past `limit` bytes. A
    /// URI already subscribed costs nothing more.
    pub(crate) fn subscribe(&mut self, uri: String, limit: usize) -> Result<(), SubscriptionsFull> {
        if self.uris.contains(&uri) {
            return Ok(());
        }
        let needed = cost(&uri);
        let after = self.bytes.saturating_add(needed);
        if after > limit {
            return Err(SubscriptionsFull {
                limit,
                held: self.bytes,
                needed,
            });
        }
        self.bytes = after;
        self.uris.insert(uri);
        Ok(())
    }

    /// Removes `uri` (nothing if it was not subscribed).
    pub(crate) fn unsubscribe(&mut self, uri: &str) {
        if self.uris.remove(uri) {
            self.bytes = self.bytes.saturating_sub(cost(uri));
        }
    }

    /// The URIs subscribed.
    #[cfg(feature = "http")]
    pub(crate) fn uris(&self) -> impl Iterator<Item = &String> {
        self.uris.iter()
    }

    pub(crate) fn contains(&self, uri: &str) -> bool {
        self.uris.contains(uri)
    }

    /// Bytes charged.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_are_charged_their_bytes_and_refused_past_the_limit() {
        let uri = |i: usize| format!("{i:0100}");
        // A subscription is charged its URI's bytes and at least the
        // `String` that holds them, whatever its URI's length.
        let charge = |uri: &str| {
            let mut s = Subscriptions::default();
            s.subscribe(uri.to_owned(), usize::MAX).expect("fits");
            s.bytes()
        };
        let one = charge(&uri(0));
        assert!(one >= 100 + std::mem::size_of::<String>(), "{one}");
        assert_eq!(charge(&"u".repeat(1100)), one + 1000);
        let mut s = Subscriptions::default();
        let limit = 3 * one;
        for i in 0..3 {
            s.subscribe(uri(i), limit).expect("fits");
        }
        // The same URI again costs nothing; a fourth does not fit.
        s.subscribe(uri(0), limit).expect("already held");
        assert_eq!(s.bytes(), limit);
        let full = s.subscribe(uri(3), limit).unwrap_err();
        assert_eq!((full.held, full.needed), (limit, one));
        let e = full.to_error_object();
        assert!(
            e.message.contains("max_subscription_bytes"),
            "{}",
            e.message
        );
        // Unsubscribing frees room; an unknown URI changes nothing.
        s.unsubscribe(&uri(1));
        s.unsubscribe("never");
        s.subscribe(uri(3), limit).expect("room again");
        assert!(s.contains(&uri(3)) && !s.contains(&uri(1)));
    }
}
