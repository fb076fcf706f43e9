//! A tool's arguments checked against the tool's own `inputSchema` before
//! the tool runs. The Rust type says less than the schema: `{"count": 99}`
//! decodes into a `u32` whose schema says `maximum: 20`, and a tool given a
//! hand-written schema has no Rust type to speak of. MCP asks servers to
//! validate every tool input and to answer a validation error as a tool
//! execution error (`isError: true`) the model can correct; this is where
//! the error text is made: each argument and the rule it broke.
//!
//! The schema is compiled once, when the tool is registered, and only
//! checked per call (the valid case is one pass over the arguments, with no
//! allocation for the error report).

use serde_json::Value;

use crate::memory_estimate;

/// Violations listed in one error (the rest are counted).
const MAX_PROBLEMS: usize = 8;
/// Longest description of one violation, in bytes: a description quotes
/// the offending value, which the client chose.
const MAX_PROBLEM_BYTES: usize = 200;

/// A tool's compiled `inputSchema`, or why it would not compile.
pub(super) struct ArgumentCheck(Result<jsonschema::Validator, String>);

impl ArgumentCheck {
    /// Compiles `schema` (JSON Schema 2020-12 unless it names another
    /// dialect in `$schema`). A schema that does not compile (or needs a
    /// remote `$ref`) is logged here, and every call of the tool is then
    /// refused with the reason: a check that cannot run is not skipped.
    pub(super) fn compile(tool: &str, schema: &Value) -> Self {
        match jsonschema::validator_for(schema) {
            Ok(v) => Self(Ok(v)),
            Err(e) => {
                let reason = bounded(e.to_string());
                tracing::warn!(
                    tool,
                    error = %reason,
                    "the tool's inputSchema is not a valid JSON Schema: its calls will be refused"
                );
                Self(Err(reason))
            }
        }
    }

    /// `Ok` when `args` satisfy the schema; otherwise each violation, as
    /// `argument <path>: <what> (rule: <keyword>)`, separated by `; `.
    pub(super) fn check(&self, args: &Value) -> Result<(), String> {
        let v = match &self.0 {
            Ok(v) => v,
            Err(reason) => return Err(format!("its inputSchema is not valid: {reason}")),
        };
        if v.is_valid(args) {
            return Ok(());
        }
        let mut problems = Vec::new();
        let mut more = 0usize;
        for e in v.iter_errors(args) {
            if problems.len() == MAX_PROBLEMS {
                more += 1;
                continue;
            }
            let path = e.instance_path().to_string();
            let at = match path.strip_prefix('/') {
                Some(p) if !p.is_empty() => format!("argument {p}"),
                _ => "arguments".to_owned(),
            };
            problems.push(format!(
                "{at}: {} (rule: {})",
                bounded(e.to_string()),
                e.kind().keyword()
            ));
        }
        if more > 0 {
            problems.push(format!("and {more} more"));
        }
        Err(problems.join("; "))
    }
}

/// The members of a JSON object that decoding it into a Rust type keeps:
/// those the type's generated schema names, when it names every member it
/// takes (an object schema without `additionalProperties`: serde drops
/// the others); otherwise all (a map, `serde_json::Value`, an enum).
pub(super) struct Kept(Option<Vec<String>>);

impl Kept {
    /// The members kept by the type whose generated schema is `schema`.
    pub(super) fn of(schema: &Value) -> Self {
        let named = schema.get("type").and_then(Value::as_str) == Some("object")
            && schema
                .get("additionalProperties")
                .is_none_or(|a| *a == Value::Bool(false));
        Kept(named.then(|| {
            schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default()
        }))
    }

    /// Bytes the kept members of `args` hold parsed: what the decoded
    /// arguments are charged (a Rust type seldom holds more than the JSON
    /// value it was decoded from).
    pub(super) fn estimate(&self, args: &Value) -> usize {
        match (&self.0, args) {
            (Some(names), Value::Object(m)) => names
                .iter()
                .filter_map(|n| m.get(n))
                .map(memory_estimate::value)
                .sum(),
            _ => memory_estimate::value(args),
        }
    }
}

/// `s` cut to [`MAX_PROBLEM_BYTES`] (at a character boundary), marked.
fn bounded(mut s: String) -> String {
    if s.len() > MAX_PROBLEM_BYTES {
        let mut end = MAX_PROBLEM_BYTES;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn violations_name_the_argument_and_the_rule_and_stay_short() {
        let check = ArgumentCheck::compile(
            "t",
            &json!({
                "type": "object",
                "properties": {
                    "n": { "type": "integer", "maximum": 20 },
                    "s": { "type": "string", "maxLength": 3 },
                },
                "required": ["n"],
            }),
        );
        assert_eq!(check.check(&json!({ "n": 20 })), Ok(()));
        let e = check
            .check(&json!({ "n": 21, "s": "x".repeat(10_000) }))
            .unwrap_err();
        assert!(
            e.contains("argument n: ") && e.contains("(rule: maximum)"),
            "{e}"
        );
        assert!(
            e.contains("argument s: ") && e.contains("(rule: maxLength)"),
            "{e}"
        );
        assert!(e.len() < 2 * (MAX_PROBLEM_BYTES + 64), "{} bytes", e.len());
        let e = check.check(&json!({})).unwrap_err();
        assert!(
            e.starts_with("arguments: ") && e.contains("(rule: required)"),
            "{e}"
        );
    }

    #[test]
    fn the_members_kept_are_those_a_struct_names_or_all_for_a_map_or_a_value() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Sleep {
            ms: u64,
        }
        let pad = json!(vec![0u8; 1000]);
        let args = json!({ "ms": 5, "pad": pad });
        let only_ms = memory_estimate::value(&json!(5));
        let sleep = Kept::of(&crate::server::schema_of::<Sleep>());
        assert_eq!(sleep.estimate(&args), only_ms);
        let whole = memory_estimate::value(&args);
        for all in [
            Kept::of(&crate::server::schema_of::<Value>()),
            Kept::of(&crate::server::schema_of::<
                std::collections::HashMap<String, u8>,
            >()),
        ] {
            assert_eq!(all.estimate(&args), whole);
        }
    }

    #[test]
    fn a_schema_that_does_not_compile_refuses_every_call() {
        let check = ArgumentCheck::compile("t", &json!({ "type": 12 }));
        let e = check.check(&json!({})).unwrap_err();
        assert!(e.contains("inputSchema is not valid"), "{e}");
    }

    #[test]
    fn many_violations_are_counted_not_listed() {
        let check = ArgumentCheck::compile(
            "t",
            &json!({ "type": "object", "additionalProperties": { "type": "integer" } }),
        );
        let args: serde_json::Map<String, Value> =
            (0..100).map(|i| (format!("k{i}"), json!("no"))).collect();
        let e = check.check(&Value::Object(args)).unwrap_err();
        assert_eq!(e.matches("(rule: type)").count(), MAX_PROBLEMS, "{e}");
        assert!(
            e.ends_with(&format!("and {} more", 100 - MAX_PROBLEMS)),
            "{e}"
        );
    }
}
