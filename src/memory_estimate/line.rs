//! What one line, a message or a result's bytes, will cost in memory once
//! parsed, estimated *before* parsing. So the server's byte budget,
//! [`ServerConfig::max_inbound_bytes`](crate::server::ServerConfig::max_inbound_bytes),
//! can decline to build what it cannot afford, and the client's list caps,
//! such as [`ClientConfig::max_list_bytes`](crate::client::ClientConfig::max_list_bytes),
//! can count a page without building a tree of it.
//!
//! Why not the line's length: a `serde_json::Value` costs 32 bytes per node
//! plus its heap, so the 8 MiB line `[0,0,0,...]` parses to 128 MiB, and
//! `[{"":0},{"":0},...]` to about 100 times its length, since every
//! one-entry object is a whole B-tree leaf. The estimate walks the line
//! without allocating, over its bytes when it is plain, else with serde. It
//! adds up what the parse would allocate:
//!
//! - every value: `size_of::<Value>()` where it sits: array slot, map node,
//!   or the message itself;
//! - a string: its bytes, in one allocation;
//! - an array: a `Vec` grown by doubling, as serde_json does, so its
//!   capacity is the next power of two, at least 4;
//! - an object: B-tree leaves of 11 entries, assumed only 5 full once the
//!   map outgrows one leaf, plus internal nodes. An `IndexMap`, under
//!   serde_json's `preserve_order`, costs about as much per entry;
//! - every allocation: rounded up like glibc's chunks, to 16-byte multiples
//!   including an 8-byte header, 32 bytes at least;
//! - what the server copies out of a request: `params._meta`, for the
//!   context's copy and the capabilities and client info taken from it,
//!   `params.inputResponses` and `params.requestState`;
//! - a response's `result` is not parsed but copied: its length;
//! - a fixed overhead per message for the session's bookkeeping.
//!
//! It is an estimate, on the generous side; the parse itself can need a
//! little more for a moment, while a `Vec` is moved as it doubles. A line that
//! is not valid JSON is charged [`INVALID_FACTOR`] times its length: the
//! parse of such a line can still build some members before it fails, and
//! no structure is known to count.

use std::fmt;
use std::mem::size_of;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::protocol::methods;

/// What admitting one line costs, and whether it is a control message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Estimate {
    /// Estimated bytes held once parsed, until the message is done with.
    bytes: usize,
    /// A response, a `notifications/cancelled` or a `ping` request: it
    /// unblocks or ends requests, or asks whether the server is alive and
    /// is answered at once. So it may use the budget's headroom and go
    /// past a request that waits for room.
    control: bool,
}

impl Estimate {
    /// An estimate of `bytes`, a control message or not, for tests.
    #[cfg(test)]
    pub(crate) fn new(bytes: usize, control: bool) -> Self {
        Self { bytes, control }
    }

    /// Estimated bytes held once parsed.
    #[inline]
    pub(crate) fn bytes(self) -> usize {
        self.bytes
    }

    /// Whether the line is a control message, as the field says.
    #[inline]
    pub(crate) fn is_control(self) -> bool {
        self.control
    }
}

/// Per message: the message and request structs, the request's task, its
/// context and the session's table entries, but not what the handler
/// allocates.
pub(crate) const MESSAGE_OVERHEAD: usize = 2 * 1024;
/// Bytes charged per line byte when the line is not valid JSON: above the
/// worst expansion of valid JSON under this model, about 100.
pub(crate) const INVALID_FACTOR: usize = 128;

const VALUE: usize = size_of::<Value>();
const STRING: usize = size_of::<String>();
/// A B-tree leaf of `String` keys and `Value`s: 11 of each, a parent
/// pointer, two `u16`s.
const LEAF: usize = 11 * (STRING + VALUE) + size_of::<usize>() + 4;
/// An internal node: a leaf plus 12 child pointers.
const INTERNAL: usize = LEAF + 12 * size_of::<usize>();
/// Entries per leaf assumed once a map needs more than one leaf.
const LEAF_FILL: usize = 5;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The estimate for one line, without its newline. Never fails: a line
/// that cannot be walked gets the conservative [`INVALID_FACTOR`] charge.
pub(crate) fn estimate(line: &[u8]) -> Estimate {
    let body = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    // The serde walk validates every string and number as a parse would:
    // most of the cost of admitting a small request. The byte walk sums the
    // same in one cheap pass, and hands over whatever it is unsure of.
    let walked = match fast::walk(body) {
        Some(w) => Ok(w),
        None => serde_walk(body),
    };
    match walked {
        Ok(w) => Estimate {
            bytes: MESSAGE_OVERHEAD
                .saturating_add(VALUE)
                .saturating_add(w.heap)
                .saturating_add(w.extra),
            control: (w.is_response && !w.has_method)
                || (w.is_cancel && !w.has_id)
                || (w.is_ping && w.has_id),
        },
        Err(_) => Estimate {
            bytes: MESSAGE_OVERHEAD.saturating_add(line.len().saturating_mul(INVALID_FACTOR)),
            control: false,
        },
    }
}

/// The estimate's walk over the bytes themselves, for the lines it is sure
/// of: the same sums as the serde walk, [`Walker`]. It gives `None` for
/// anything else, which the serde walk then decides: invalid JSON, escapes,
/// numbers serde might reject as out of range, deep nesting.
mod fast {
    use super::{alloc, array_heap, map_heap, string_heap, Role, Walked, VALUE};
    use crate::protocol::methods;

    /// Deeper nesting goes to serde, which refuses beyond 128 levels.
    const MAX_DEPTH: u32 = 100;
    /// Longer integer parts go to serde: they could overflow an `f64`.
    const MAX_INT_DIGITS: usize = 300;

    pub(super) fn walk(body: &[u8]) -> Option<Walked> {
        let mut w = Bytes {
            s: body,
            i: 0,
            depth: 0,
        };
        w.ws();
        let sum = w.value(Role::Envelope)?;
        w.ws();
        (w.i == body.len()).then_some(sum)
    }

    struct Bytes<'a> {
        s: &'a [u8],
        i: usize,
        depth: u32,
    }

    impl<'a> Bytes<'a> {
        fn peek(&self) -> Option<u8> {
            self.s.get(self.i).copied()
        }

        /// JSON's blanks, as serde skips them.
        fn ws(&mut self) {
            while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
                self.i += 1;
            }
        }

        fn eat(&mut self, b: u8) -> Option<()> {
            (self.peek()? == b).then(|| self.i += 1)
        }

        fn value(&mut self, role: Role) -> Option<Walked> {
            match self.peek()? {
                b'{' => self.map(role),
                b'[' => self.seq(),
                b'"' => {
                    let s = self.string()?;
                    Some(Walked {
                        heap: string_heap(s.len()),
                        is_cancel: role == Role::Method && s == methods::CANCELLED.as_bytes(),
                        is_ping: role == Role::Method && s == methods::PING.as_bytes(),
                        ..Walked::default()
                    })
                }
                b't' => self.literal(b"true"),
                b'f' => self.literal(b"false"),
                b'n' => self.literal(b"null"),
                b'-' | b'0'..=b'9' => self.number(),
                _ => None,
            }
        }

        fn literal(&mut self, word: &[u8]) -> Option<Walked> {
            let end = self.i.checked_add(word.len())?;
            (self.s.get(self.i..end)? == word).then(|| {
                self.i = end;
                Walked::default()
            })
        }

        /// A string without escapes or control characters: its bytes. Its
        /// decoded length is then its length.
        fn string(&mut self) -> Option<&'a [u8]> {
            self.eat(b'"')?;
            let rest = self.s.get(self.i..)?;
            let len = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
            let s = rest.get(..len)?;
            if rest.get(len) != Some(&b'"') {
                return None;
            }
            if !s.is_ascii() {
                std::str::from_utf8(s).ok()?;
            }
            self.i += len + 1;
            Some(s)
        }

        fn digits(&mut self) -> usize {
            let start = self.i;
            while let Some(b'0'..=b'9') = self.peek() {
                self.i += 1;
            }
            self.i - start
        }

        /// JSON's number grammar, without an exponent.
        fn number(&mut self) -> Option<Walked> {
            let _ = self.eat(b'-');
            match self.peek()? {
                b'0' => self.i += 1,
                b'1'..=b'9' => {
                    if self.digits() > MAX_INT_DIGITS {
                        return None;
                    }
                }
                _ => return None,
            }
            if self.eat(b'.').is_some() && self.digits() == 0 {
                return None;
            }
            match self.peek() {
                Some(b'e' | b'E') => None,
                _ => Some(Walked::default()),
            }
        }

        fn enter(&mut self) -> Option<()> {
            self.depth += 1;
            (self.depth <= MAX_DEPTH).then_some(())
        }

        fn seq(&mut self) -> Option<Walked> {
            self.eat(b'[')?;
            self.enter()?;
            let (mut n, mut sum) = (0usize, Walked::default());
            self.ws();
            if self.eat(b']').is_none() {
                loop {
                    self.ws();
                    let w = self.value(Role::Value)?;
                    n += 1;
                    sum.heap = sum.heap.saturating_add(w.heap);
                    sum.extra = sum.extra.saturating_add(w.extra);
                    self.ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            self.depth -= 1;
            sum.heap = sum.heap.saturating_add(array_heap(n));
            Some(sum)
        }

        /// Mirrors [`Walker::visit_map`](super::Walker).
        fn map(&mut self, role: Role) -> Option<Walked> {
            self.eat(b'{')?;
            self.enter()?;
            let (mut n, mut sum) = (0usize, Walked::default());
            self.ws();
            if self.eat(b'}').is_none() {
                loop {
                    self.ws();
                    let name = self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    n += 1;
                    sum.heap = sum.heap.saturating_add(string_heap(name.len()));
                    let w = match (role, name) {
                        (Role::Envelope, b"result") => {
                            // Kept as its bytes: what serde's RawValue spans.
                            let start = self.i;
                            self.value(Role::Value)?;
                            sum.is_response = true;
                            sum.extra = sum.extra.saturating_add(alloc(self.i - start));
                            None
                        }
                        (Role::Envelope, b"error") => {
                            let w = self.value(Role::Value)?;
                            sum.is_response = true;
                            sum.extra = sum.extra.saturating_add(w.heap);
                            Some(w)
                        }
                        (Role::Envelope, b"id") => {
                            sum.has_id = true;
                            Some(self.value(Role::Value)?)
                        }
                        (Role::Envelope, b"method") => {
                            let w = self.value(Role::Method)?;
                            sum.has_method = true;
                            sum.is_cancel = w.is_cancel;
                            sum.is_ping = w.is_ping;
                            Some(w)
                        }
                        (Role::Envelope, b"params") => Some(self.value(Role::Params)?),
                        (Role::Params, b"_meta" | b"inputResponses" | b"requestState") => {
                            let w = self.value(Role::Value)?;
                            sum.extra = sum
                                .extra
                                .saturating_add(w.heap.saturating_mul(2))
                                .saturating_add(VALUE);
                            Some(w)
                        }
                        _ => Some(self.value(Role::Value)?),
                    };
                    if let Some(w) = w {
                        sum.heap = sum.heap.saturating_add(w.heap);
                        sum.extra = sum.extra.saturating_add(w.extra);
                    }
                    self.ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            self.depth -= 1;
            sum.heap = sum.heap.saturating_add(map_heap(n));
            Some(sum)
        }
    }
}

fn serde_walk(body: &[u8]) -> Result<Walked, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(body);
    Walker(Role::Envelope)
        .deserialize(&mut de)
        .and_then(|w| de.end().map(|()| w))
}

/// Bytes a heap allocation of `n` bytes occupies; 0 for none.
fn alloc(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        n.saturating_add(8 + 15).max(32) & !15
    }
}

fn string_heap(len: usize) -> usize {
    alloc(len)
}

fn array_heap(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let cap = n.checked_next_power_of_two().unwrap_or(usize::MAX).max(4);
    alloc(cap.saturating_mul(VALUE))
}

fn map_heap(n: usize) -> usize {
    match n {
        0 => 0,
        1..=11 => alloc(LEAF),
        _ => {
            let leaves = n.div_ceil(LEAF_FILL);
            let internals = leaves.div_ceil(LEAF_FILL - 1);
            leaves
                .saturating_mul(alloc(LEAF))
                .saturating_add(internals.saturating_mul(alloc(INTERNAL)))
        }
    }
}

/// Where in the message a value sits, which decides what else it costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The top-level object.
    Envelope,
    /// The request's `params`.
    Params,
    /// The `method` member.
    Method,
    /// Anything else.
    Value,
}

/// The sums of one walked value.
#[derive(Debug, Default, PartialEq, Eq)]
struct Walked {
    /// Heap bytes of the value as parsed, its own `Value` slot excluded.
    heap: usize,
    /// Bytes beyond the parsed value: copies the server makes, raw results.
    extra: usize,
    has_id: bool,
    has_method: bool,
    is_cancel: bool,
    is_ping: bool,
    is_response: bool,
}

/// The object members the walk treats specially.
enum Key {
    Id,
    Method,
    Params,
    Result,
    Error,
    /// Copied out of `params` for the request's context.
    Copied,
    Other,
}

/// A member name: its heap cost and what it is.
struct Name {
    heap: usize,
    key: Key,
}

struct NameSeed(Role);

impl<'de> DeserializeSeed<'de> for NameSeed {
    type Value = Name;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Name, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for NameSeed {
    type Value = Name;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Name, E> {
        let key = match (self.0, s) {
            (Role::Envelope, "id") => Key::Id,
            (Role::Envelope, "method") => Key::Method,
            (Role::Envelope, "params") => Key::Params,
            (Role::Envelope, "result") => Key::Result,
            (Role::Envelope, "error") => Key::Error,
            (Role::Params, "_meta" | "inputResponses" | "requestState") => Key::Copied,
            _ => Key::Other,
        };
        Ok(Name {
            heap: string_heap(s.len()),
            key,
        })
    }
}

/// Walks one value, summing what parsing it would allocate.
struct Walker(Role);

impl<'de> DeserializeSeed<'de> for Walker {
    type Value = Walked;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Walked, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walker {
    type Value = Walked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Walked, E> {
        Ok(Walked::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Walked, E> {
        Ok(Walked::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Walked, E> {
        Ok(Walked::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Walked, E> {
        Ok(Walked::default())
    }
    fn visit_unit<E>(self) -> Result<Walked, E> {
        Ok(Walked::default())
    }

    fn visit_str<E>(self, s: &str) -> Result<Walked, E> {
        Ok(Walked {
            heap: string_heap(s.len()),
            is_cancel: self.0 == Role::Method && s == methods::CANCELLED,
            is_ping: self.0 == Role::Method && s == methods::PING,
            ..Walked::default()
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Walked, A::Error> {
        let (mut n, mut sum) = (0usize, Walked::default());
        while let Some(w) = seq.next_element_seed(Walker(Role::Value))? {
            n += 1;
            sum.heap = sum.heap.saturating_add(w.heap);
            sum.extra = sum.extra.saturating_add(w.extra);
        }
        sum.heap = sum.heap.saturating_add(array_heap(n));
        Ok(sum)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Walked, A::Error> {
        let (mut n, mut sum) = (0usize, Walked::default());
        while let Some(name) = map.next_key_seed(NameSeed(self.0))? {
            n += 1;
            sum.heap = sum.heap.saturating_add(name.heap);
            let w = match name.key {
                Key::Result => {
                    // Kept as its bytes (copied out of the line), not parsed.
                    let raw: &RawValue = map.next_value()?;
                    sum.is_response = true;
                    sum.extra = sum.extra.saturating_add(alloc(raw.get().len()));
                    continue;
                }
                Key::Error => {
                    let w = map.next_value_seed(Walker(Role::Value))?;
                    // Parsed, then decoded again into the error object.
                    sum.is_response = true;
                    sum.extra = sum.extra.saturating_add(w.heap);
                    w
                }
                Key::Id => {
                    sum.has_id = true;
                    map.next_value_seed(Walker(Role::Value))?
                }
                Key::Method => {
                    let w = map.next_value_seed(Walker(Role::Method))?;
                    sum.has_method = true;
                    sum.is_cancel = w.is_cancel;
                    sum.is_ping = w.is_ping;
                    w
                }
                Key::Params => map.next_value_seed(Walker(Role::Params))?,
                Key::Copied => {
                    let w = map.next_value_seed(Walker(Role::Value))?;
                    // `_meta` is copied for the context, and its capabilities
                    // and client info once more: twice in all, at most.
                    sum.extra = sum
                        .extra
                        .saturating_add(w.heap.saturating_mul(2))
                        .saturating_add(VALUE);
                    w
                }
                Key::Other => map.next_value_seed(Walker(Role::Value))?,
            };
            sum.heap = sum.heap.saturating_add(w.heap);
            sum.extra = sum.extra.saturating_add(w.extra);
        }
        sum.heap = sum.heap.saturating_add(map_heap(n));
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(params: &str) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#)
            .into_bytes()
    }

    #[test]
    fn an_array_of_zeros_costs_a_value_per_element_not_a_byte() {
        let n = 1 << 20;
        let mut params = "[0".to_owned();
        params.push_str(&",0".repeat(n - 1));
        params.push(']');
        let line = request(&params);
        let e = estimate(&line);
        // 2 MiB of text, 32 MiB of Values.
        assert!(e.bytes >= n * VALUE, "{} < {}", e.bytes, n * VALUE);
        assert!(e.bytes < n * VALUE + 64 * 1024, "{}", e.bytes);
        assert!(!e.control);
    }

    #[test]
    fn small_objects_cost_a_whole_btree_leaf_each() {
        let n = 10_000;
        let params = format!("[{}]", vec![r#"{"":0}"#; n].join(","));
        let e = estimate(&request(&params));
        assert!(e.bytes >= n * LEAF, "{}", e.bytes);
    }

    #[test]
    fn a_long_string_costs_about_its_length() {
        let s = "x".repeat(1 << 20);
        let e = estimate(&request(&format!(r#"{{"text":"{s}"}}"#)));
        assert!(e.bytes >= 1 << 20);
        assert!(e.bytes < (1 << 20) + 8 * 1024, "{}", e.bytes);
    }

    #[test]
    fn what_the_server_copies_out_of_params_is_counted_again() {
        let big = "x".repeat(1 << 20);
        let plain = estimate(&request(&format!(r#"{{"other":"{big}"}}"#)));
        let meta = estimate(&request(&format!(r#"{{"_meta":{{"k":"{big}"}}}}"#)));
        assert!(
            meta.bytes >= plain.bytes + 2 * (1 << 20),
            "{meta:?} {plain:?}"
        );
    }

    #[test]
    fn responses_and_cancellations_are_control_messages() {
        let result = br#"{"jsonrpc":"2.0","id":3,"result":{"roots":[1,2,3]}}"#;
        let error = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#;
        let cancel =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#;
        for line in [&result[..], error, cancel] {
            assert!(estimate(line).control, "{}", String::from_utf8_lossy(line));
        }
        let ping = br#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#;
        assert!(estimate(ping).control);
        let request_named_cancel =
            br#"{"jsonrpc":"2.0","id":1,"method":"notifications/cancelled","params":{}}"#;
        let other = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        let ping_notification = br#"{"jsonrpc":"2.0","method":"ping"}"#;
        for line in [
            &request_named_cancel[..],
            other,
            ping_notification,
            &request("{}"),
        ] {
            assert!(!estimate(line).control, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn a_result_is_charged_its_bytes_as_it_is_not_parsed() {
        let arr = format!("[0{}]", ",0".repeat(1 << 18));
        let line = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{arr}}}"#);
        let e = estimate(line.as_bytes());
        assert!(
            e.bytes >= arr.len() && e.bytes < arr.len() + 8 * 1024,
            "{e:?}"
        );
    }

    #[test]
    fn invalid_json_is_charged_more_than_the_valid_line_it_falls_short_of_and_a_bom_is_skipped() {
        // The densest valid lines of 64 KiB, each with its last byte cut:
        // what the parse of the cut line could build is less than what the
        // whole one costs.
        let dense = |item: &str| {
            let mut line = format!("[{item}");
            while line.len() < 64 * 1024 {
                line.push(',');
                line.push_str(item);
            }
            line.push(']');
            line
        };
        let lines = ["0", "\"\"", "[]", "{}", r#"{"":0}"#, r#"{"a":[{"":0}]}"#]
            .map(dense)
            .into_iter()
            // A request's parse, not what the server copies out of a valid
            // one afterwards (`_meta`): an invalid line is never copied.
            .chain([String::from_utf8(request(&dense(r#"{"":0}"#))).unwrap()]);
        for valid in lines {
            let cut = &valid.as_bytes()[..valid.len() - 1];
            assert!(
                estimate(cut).bytes > estimate(valid.as_bytes()).bytes,
                "{}...: {:?} cut, {:?} whole",
                &valid[..40],
                estimate(cut),
                estimate(valid.as_bytes())
            );
        }
        let mut bom = UTF8_BOM.to_vec();
        bom.extend_from_slice(&request("{}"));
        assert_eq!(estimate(&bom), estimate(&request("{}")));
    }

    /// The byte walk gives the serde walk's sums, or leaves the line to it.
    fn same_as_serde(line: &[u8]) -> bool {
        match fast::walk(line) {
            Some(w) => serde_walk(line).ok() == Some(w),
            None => true,
        }
    }

    /// The byte walk walks the line, and gives the serde walk's sums.
    fn walked_as_serde(line: &[u8]) -> bool {
        let walked = fast::walk(line);
        walked.is_some() && walked == serde_walk(line).ok()
    }

    #[test]
    fn the_byte_walk_sums_what_the_serde_walk_sums() {
        let sure: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#,
            br#" {"jsonrpc":"2.0","id":"a","method":"x","params":{"_meta":{"a":[1,2.5,-0,{"b":null}]},"inputResponses":{"k":{}},"requestState":"s"}} "#,
            br#"{"jsonrpc":"2.0","id":3,"result":  {"roots":[1,2,3]}  }"#,
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no","data":[true,false]}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
            br#"{"method":"a","method":"notifications/cancelled","id":1,"id":2}"#,
            "{\"x\":\"h\u{e9}llo \u{1F600}\",\"y\":[[],{},[{}],0.125]}".as_bytes(),
            br#"[{"":0},{"":0},[0],"notifications/cancelled"]"#,
            br#"{"params":[{"_meta":{"a":"b"}}],"result":[0,0,0]}"#,
            b"\t[ 1 , 2 ]\r\n",
            b"0",
            b"-12.5",
        ];
        for line in sure {
            assert!(walked_as_serde(line), "{}", String::from_utf8_lossy(line));
        }
        let unsure: &[&[u8]] = &[
            br#"{"a":"esc\"aped"}"#,
            br#"{"a":1e5}"#,
            br#"{"a":01}"#,
            br#"{"a":1.}"#,
            br#"{"a":-}"#,
            br#"{"a":[1,]}"#,
            br#"{"a":1,}"#,
            br#"{"a" 1}"#,
            br#"{"a":tru}"#,
            br#"{"a":truex}"#,
            b"{\"a\":\"\xff\"}",
            b"{\"a\":\"x\ny\"}",
            br#"{"a":1} x"#,
            br#"{"a":[1"#,
            b"",
        ];
        for line in unsure {
            assert!(
                fast::walk(line).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
        assert!(fast::walk(deep.as_bytes()).is_none());
        let long = format!("[{}]", "9".repeat(400));
        assert!(fast::walk(long.as_bytes()).is_none());
    }

    /// Any JSON the messages carry: `plain` leaves out what the byte walk
    /// leaves to serde: escapes, control characters, exponents.
    fn arb_json(plain: bool) -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let (key_chars, string_chars) = if plain {
            ("[a-z\u{e9} ]{0,4}", "[a-z\u{e9} ]{0,6}")
        } else {
            ("[a-z\u{e9}\"]{0,4}", "[a-z\u{e9}\\\\\n]{0,6}")
        };
        let key = prop_oneof![
            Just("id".to_owned()),
            Just("method".to_owned()),
            Just("params".to_owned()),
            Just("result".to_owned()),
            Just("error".to_owned()),
            Just("_meta".to_owned()),
            Just("inputResponses".to_owned()),
            Just("requestState".to_owned()),
            key_chars,
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            // Eighths print without an exponent; any float may not.
            (-8_000_000i64..8_000_000).prop_map(move |k| Value::from(if plain {
                k as f64 / 8.0
            } else {
                k as f64 / 8e6
            })),
            Just(Value::from(methods::CANCELLED)),
            string_chars.prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((key.clone(), inner), 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn to_line(v: &Value, pretty: bool) -> Vec<u8> {
        if pretty {
            serde_json::to_vec_pretty(v).unwrap()
        } else {
            serde_json::to_vec(v).unwrap()
        }
    }

    proptest::proptest! {
        #[test]
        fn the_byte_walk_walks_plain_json_and_sums_what_serde_sums(v in arb_json(true), pretty: bool) {
            let line = to_line(&v, pretty);
            proptest::prop_assert!(walked_as_serde(&line), "{}", String::from_utf8_lossy(&line));
        }

        #[test]
        fn the_byte_walk_never_disagrees_with_serde_on_any_json(v in arb_json(false), pretty: bool) {
            let line = to_line(&v, pretty);
            proptest::prop_assert!(same_as_serde(&line), "{}", String::from_utf8_lossy(&line));
        }
    }

    #[test]
    fn the_estimate_covers_the_arrays_serde_json_builds() {
        // The capacity serde_json really gives an array of each length (the
        // node sizes of a BTreeMap are not observable).
        for len in 0..=200 {
            let line = format!("[{}]", vec!["0"; len].join(","));
            let v: Value = serde_json::from_str(&line).unwrap();
            let built = v.as_array().unwrap().capacity() * size_of::<Value>();
            assert!(
                array_heap(len) >= built,
                "{len} values: {built} bytes built"
            );
        }
    }
}
