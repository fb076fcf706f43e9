//! Tools' `x-mcp-header` annotations (2026-07-28): which arguments of a
//! tool are mirrored into `Mcp-Param-{Name}` headers, and which tool
//! definitions are invalid and must be dropped.
//!
//! The specification's rules for an annotation on a property of a tool's
//! `inputSchema`: the name is not empty, is an HTTP token of ASCII
//! characters (no space, colon or control character), is unique within the
//! tool compared case-insensitively, and sits on a primitive property
//! (`string`, `integer` or `boolean`; not `number`, `object`, `array` or
//! `null`). A client drops a tool that breaks any of them, and keeps the
//! others.

use serde_json::Value;

use crate::http::headers::is_token;

/// The annotation's key in a property schema.
const ANNOTATION: &str = "x-mcp-header";

/// `(argument, header name)` pairs of one tool.
pub(super) type Pairs = Vec<(String, String)>;

/// What [`filter_tools`] found: `(tool, pairs)` of the kept tools, and
/// `(tool, why)` of the dropped.
pub(super) type Filtered = (Vec<(String, Pairs)>, Vec<(String, String)>);

/// The `(argument, header name)` pairs of `tool`, or why it is invalid.
pub(super) fn annotations(tool: &Value) -> Result<Pairs, String> {
    let Some(props) = tool
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return Ok(Vec::new());
    };
    let mut pairs: Pairs = Vec::new();
    for (arg, schema) in props {
        let Some(raw) = schema.get(ANNOTATION) else {
            continue;
        };
        let Some(name) = raw.as_str() else {
            return Err(format!("{ANNOTATION} of {arg:?} is not a string"));
        };
        if !is_token(name) {
            return Err(format!(
                "{ANNOTATION} {name:?} of {arg:?} is empty or not an HTTP token"
            ));
        }
        let primitive = match schema.get("type") {
            Some(Value::String(t)) => matches!(t.as_str(), "string" | "integer" | "boolean"),
            _ => false,
        };
        if !primitive {
            return Err(format!(
                "{ANNOTATION} {name:?} is on {arg:?}, which is not a string, integer or boolean"
            ));
        }
        if pairs.iter().any(|(_, n)| n.eq_ignore_ascii_case(name)) {
            return Err(format!("{ANNOTATION} {name:?} is used twice"));
        }
        pairs.push((arg.clone(), name.to_owned()));
    }
    Ok(pairs)
}

/// Drops the invalid tools from a `tools/list` result (in place) and
/// returns the annotations of the valid ones, with the names and reasons
/// of the dropped.
pub(super) fn filter_tools(result: &mut Value) -> Filtered {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return (kept, dropped);
    };
    tools.retain(|tool| {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match annotations(tool) {
            Ok(pairs) => {
                kept.push((name, pairs));
                true
            }
            Err(why) => {
                dropped.push((name, why));
                false
            }
        }
    });
    (kept, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(props: Value) -> Value {
        json!({ "name": "t", "inputSchema": { "type": "object", "properties": props } })
    }

    #[test]
    fn valid_annotations_map_arguments_to_header_names() {
        let t = tool(json!({
            "region": { "type": "string", "x-mcp-header": "Region" },
            "n": { "type": "integer", "x-mcp-header": "N" },
            "q": { "type": "string" }
        }));
        let mut pairs = annotations(&t).unwrap();
        pairs.sort();
        assert_eq!(
            pairs,
            [("n".into(), "N".into()), ("region".into(), "Region".into())]
        );
    }

    #[test]
    fn each_rule_of_the_specification_drops_the_tool() {
        for props in [
            json!({ "v": { "type": "string", "x-mcp-header": "" } }),
            json!({ "v": { "type": "object", "x-mcp-header": "V" } }),
            json!({ "v": { "type": "array", "x-mcp-header": "V" } }),
            json!({ "v": { "type": "null", "x-mcp-header": "V" } }),
            json!({ "v": { "type": "number", "x-mcp-header": "V" } }),
            json!({ "a": { "type": "string", "x-mcp-header": "R" }, "b": { "type": "string", "x-mcp-header": "r" } }),
            json!({ "v": { "type": "string", "x-mcp-header": "My Region" } }),
            json!({ "v": { "type": "string", "x-mcp-header": "Region:Primary" } }),
            json!({ "v": { "type": "string", "x-mcp-header": "Région" } }),
            json!({ "v": { "type": "string", "x-mcp-header": "Region\t1" } }),
            json!({ "v": { "type": "string", "x-mcp-header": 7 } }),
        ] {
            assert!(annotations(&tool(props.clone())).is_err(), "{props}");
        }
    }

    #[test]
    fn filtering_keeps_valid_tools_and_names_the_dropped() {
        let mut result = json!({ "tools": [
            { "name": "ok", "inputSchema": { "type": "object", "properties": { "r": { "type": "string", "x-mcp-header": "R" } } } },
            { "name": "bad", "inputSchema": { "type": "object", "properties": { "r": { "type": "object", "x-mcp-header": "R" } } } },
            { "name": "plain", "inputSchema": { "type": "object" } }
        ]});
        let (kept, dropped) = filter_tools(&mut result);
        assert_eq!(kept.len(), 2);
        assert_eq!(dropped[0].0, "bad");
        let names: Vec<_> = result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ok", "plain"]);
    }
}
