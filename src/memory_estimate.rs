//! What a parsed message holds in memory, in bytes: the measure of every
//! bound on what a peer can make this process keep.
//!
//! A line's length is not that measure: `[0,0,0,...]` is 2 bytes per
//! element on the wire and a 32-byte `serde_json::Value`, plus the vector's
//! slack, once parsed. A small object costs a whole B-tree node of about
//! 600 bytes however few members it has. [`value`] walks the tree and adds
//! what each node holds, with the allocator's per-allocation overhead: an
//! estimate, calibrated to stay above what the process really holds.

use std::mem::size_of;

use serde_json::Value;

mod line;

pub(crate) use line::{estimate, Estimate, MESSAGE_OVERHEAD};

use crate::jsonrpc::{Message, Outcome};

/// Bytes held by `v` and everything below it, its own node included.
pub(crate) fn value(v: &Value) -> usize {
    size_of::<Value>() + heap(v)
}

/// What the allocator spends on one allocation beyond its size.
const ALLOCATION: usize = 16;

/// Entries of one B-tree node, since serde_json's map is a `BTreeMap`.
const NODE_ENTRIES: usize = 11;

/// Bytes held by a string of `capacity` bytes on the heap.
fn string(capacity: usize) -> usize {
    if capacity == 0 {
        0
    } else {
        capacity + ALLOCATION
    }
}

/// Bytes `v` holds on the heap, not counting its own node.
fn heap(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(s) => string(s.capacity()),
        Value::Array(a) => {
            let slots = a.capacity() * size_of::<Value>();
            let slots = if slots == 0 { 0 } else { slots + ALLOCATION };
            slots + a.iter().map(heap).sum::<usize>()
        }
        Value::Object(m) => {
            // Whole nodes of (key, value) slots, at least one when not
            // empty, then what each key and value holds.
            let nodes = m.len().div_ceil(NODE_ENTRIES);
            let node = NODE_ENTRIES * (size_of::<String>() + size_of::<Value>()) + ALLOCATION + 16;
            nodes * node
                + m.iter()
                    .map(|(k, v)| string(k.capacity()) + heap(v))
                    .sum::<usize>()
        }
    }
}

impl Message {
    /// Bytes this message holds in memory: an estimate, as the module says.
    pub(crate) fn estimated_bytes(&self) -> usize {
        let params = |p: &Option<Value>| p.as_ref().map_or(0, value);
        size_of::<Message>()
            + match self {
                Message::Request(r) => string(r.method.capacity()) + params(&r.params),
                Message::Notification(n) => string(n.method.capacity()) + params(&n.params),
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
        // A small object costs a whole node.
        assert!(value(&serde_json::json!({ "a": 1 })) > 600);
    }
}
