//! What a parsed message holds in memory, in bytes: the measure of every
//! bound on what a peer can make this process keep.
//!
//! A line's length is not that measure: `[0,0,0,...]` is 2 bytes per
//! element on the wire and a 32-byte `serde_json::Value` (plus the vector's
//! slack) once parsed. [`value`] walks the tree and adds what each node
//! holds; it is an estimate (allocator overhead is not counted) but never
//! an underestimate of the values and their buffers.

use std::mem::size_of;

use serde_json::Value;

use super::{Message, Outcome};

/// Bytes held by `v` and everything below it, its own node included.
pub(crate) fn value(v: &Value) -> usize {
    size_of::<Value>() + heap(v)
}

/// Bytes `v` holds on the heap (not counting its own node).
fn heap(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(s) => s.capacity(),
        Value::Array(a) => a.capacity() * size_of::<Value>() + a.iter().map(heap).sum::<usize>(),
        Value::Object(m) => m
            .iter()
            // A map entry: the key's String, the value, and about two
            // words of node overhead.
            .map(|(k, v)| size_of::<String>() + k.capacity() + value(v) + 2 * size_of::<usize>())
            .sum(),
    }
}

impl Message {
    /// Bytes this message holds in memory (an estimate, see the module).
    pub(crate) fn footprint(&self) -> usize {
        let params = |p: &Option<Value>| p.as_ref().map_or(0, value);
        size_of::<Message>()
            + match self {
                Message::Request(r) => r.method.capacity() + params(&r.params),
                Message::Notification(n) => n.method.capacity() + params(&n.params),
                Message::Response(r) => match &r.outcome {
                    Outcome::Result(raw) => raw.held(),
                    Outcome::Error(e) => e.message.capacity() + e.data.as_ref().map_or(0, value),
                },
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_of_zeros_costs_far_more_than_its_line() {
        let line = format!("[{}0]", "0,".repeat(99_999));
        let v: Value = serde_json::from_str(&line).unwrap();
        let cost = value(&v);
        assert!(cost >= 100_000 * size_of::<Value>(), "{cost}");
        assert!(cost > 15 * line.len(), "{cost} vs {}", line.len());
    }

    #[test]
    fn strings_and_maps_count_their_buffers() {
        let v = serde_json::json!({ "key": "x".repeat(1000) });
        assert!(value(&v) > 1000 + 3);
        assert_eq!(value(&Value::Null), size_of::<Value>());
    }
}
