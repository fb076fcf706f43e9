//! `envFile`: a dotenv file of `KEY=VALUE` lines, as VS Code reads it.
//!
//! Blank lines and lines starting with `#` are skipped; `export ` before a
//! name is allowed. A value is taken as written (trimmed, an ` #` comment
//! after it removed), or between single quotes (literally) or double quotes
//! (with `\n`, `\r`, `\t`, `\"` and `\\` escapes). Values are not expanded.

/// A line that could not be read, with its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineError {
    pub(crate) line: usize,
    pub(crate) problem: String,
}

/// The variables of a dotenv text, in order (a repeated name: last wins).
pub(crate) fn parse(text: &str) -> Result<Vec<(String, String)>, LineError> {
    let mut vars: Vec<(String, String)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let fail = |problem: &str| LineError {
            line: i + 1,
            problem: problem.to_owned(),
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| fail("expected KEY=VALUE"))?;
        let key = key.trim();
        if key.is_empty() || key.chars().any(|c| c.is_whitespace() || c == '\0') {
            return Err(fail("the name is empty or contains whitespace"));
        }
        let value = parse_value(value.trim()).map_err(|p| fail(&p))?;
        vars.retain(|(k, _)| k != key);
        vars.push((key.to_owned(), value));
    }
    Ok(vars)
}

fn parse_value(v: &str) -> Result<String, String> {
    let mut chars = v.chars();
    match chars.next() {
        Some('\'') => {
            let body = chars.as_str();
            let end = body.find('\'').ok_or("unterminated single quote")?;
            trailing(&body[end + 1..])?;
            Ok(body[..end].to_owned())
        }
        Some('"') => {
            let mut out = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '"' => {
                        trailing(chars.as_str())?;
                        return Ok(out);
                    }
                    '\\' => out.push(match chars.next() {
                        Some('n') => '\n',
                        Some('r') => '\r',
                        Some('t') => '\t',
                        Some(c @ ('"' | '\\')) => c,
                        Some(c) => return Err(format!("unknown escape \\{c}")),
                        None => return Err("unterminated double quote".into()),
                    }),
                    c => out.push(c),
                }
            }
            Err("unterminated double quote".into())
        }
        _ => {
            let value = match v.find(" #") {
                Some(i) => &v[..i],
                None => v,
            };
            Ok(value.trim_end().to_owned())
        }
    }
}

/// What may follow a quoted value: nothing, or a comment.
fn trailing(rest: &str) -> Result<(), String> {
    let rest = rest.trim_start();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(())
    } else {
        Err(format!("unexpected text after the closing quote: {rest:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_usual_forms() {
        let text = "\
# a comment
PLAIN=value
export EXPORTED=yes
SPACED = padded value   # trailing comment
HASH=a#b
SINGLE='lit $HOME \\n # kept'
DOUBLE=\"line\\nnext \\\"q\\\"\" # comment
EMPTY=
PLAIN=again
";
        let vars = parse(text).unwrap();
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("PLAIN"), Some("again"));
        assert_eq!(get("EXPORTED"), Some("yes"));
        assert_eq!(get("SPACED"), Some("padded value"));
        assert_eq!(get("HASH"), Some("a#b"));
        assert_eq!(get("SINGLE"), Some("lit $HOME \\n # kept"));
        assert_eq!(get("DOUBLE"), Some("line\nnext \"q\""));
        assert_eq!(get("EMPTY"), Some(""));
        assert_eq!(vars.len(), 7);
    }

    #[test]
    fn bad_lines_are_reported_with_their_number() {
        for (text, line) in [
            ("A=1\nno equals sign\n", 2),
            ("A='open\n", 1),
            ("\n\nB=\"x\" junk\n", 3),
            ("=v\n", 1),
            ("A B=v\n", 1),
            ("A=\"bad \\q\"\n", 1),
        ] {
            assert_eq!(parse(text).unwrap_err().line, line, "{text:?}");
        }
    }
}
