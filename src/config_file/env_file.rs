//! `envFile`: a dotenv file of `KEY=VALUE` lines, as VS Code reads it.
//!
//! Blank lines and lines starting with `#` are skipped; `export ` before a
//! name is allowed. A value is taken as written, trimmed, with an ` #`
//! comment after it removed. It may also be between single quotes, taken
//! literally, or double quotes, with `\n`, `\r`, `\t`, `\"` and `\\`
//! escapes. Values are not expanded.

/// A line that could not be read, with its 1-based number. The problem
/// says where, by the variable's name and a column, never what the value
/// holds: the values of an env file are secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineError {
    line: usize,
    problem: String,
}

impl LineError {
    /// The 1-based line at fault, and what is wrong with it.
    pub(crate) fn into_parts(self) -> (usize, String) {
        (self.line, self.problem)
    }
}

/// The variables of a dotenv text, in order, in time linear in the length
/// of the text. For a repeated name the last wins.
pub(crate) fn parse(text: &str) -> Result<Vec<(String, String)>, LineError> {
    let mut vars: Vec<(String, String)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let fail = |problem: String| LineError {
            line: i + 1,
            problem,
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| fail("expected NAME=VALUE".into()))?;
        let key = key.trim();
        if key.is_empty() || key.chars().any(|c| c.is_whitespace() || c == '\0') {
            return Err(fail("the name is empty or contains whitespace".into()));
        }
        let value = value.trim();
        let value = parse_value(value).map_err(|(at, problem)| {
            // Where in the line, counted in characters from 1.
            let offset = value.as_ptr() as usize - raw.as_ptr() as usize + at;
            let column = raw.get(..offset).map_or(0, |b| b.chars().count()) + 1;
            fail(format!("the value of {key}, column {column}: {problem}"))
        })?;
        vars.push((key.to_owned(), value));
    }
    crate::client::merge_env(&mut vars, []);
    Ok(vars)
}

/// A value as written, quoted or not; on error, the byte offset in `v` of
/// the problem and what it is, never the text.
fn parse_value(v: &str) -> Result<String, (usize, &'static str)> {
    let mut chars = v.char_indices();
    match chars.next() {
        Some((_, '\'')) => {
            let body = &v[1..];
            let end = body.find('\'').ok_or((0, "unterminated single quote"))?;
            trailing(v, 1 + end + 1)?;
            Ok(body[..end].to_owned())
        }
        Some((_, '"')) => {
            let mut out = String::new();
            while let Some((at, c)) = chars.next() {
                match c {
                    '"' => {
                        trailing(v, at + 1)?;
                        return Ok(out);
                    }
                    '\\' => out.push(match chars.next() {
                        Some((_, 'n')) => '\n',
                        Some((_, 'r')) => '\r',
                        Some((_, 't')) => '\t',
                        Some((_, c @ ('"' | '\\'))) => c,
                        Some(_) => return Err((at, "unknown escape sequence")),
                        None => return Err((0, "unterminated double quote")),
                    }),
                    c => out.push(c),
                }
            }
            Err((0, "unterminated double quote"))
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

/// What may follow a quoted value, from byte `from` of `v`: nothing, or a
/// comment.
fn trailing(v: &str, from: usize) -> Result<(), (usize, &'static str)> {
    let rest = v.get(from..).unwrap_or("");
    let text = rest.trim_start();
    if text.is_empty() || text.starts_with('#') {
        Ok(())
    } else {
        Err((
            from + rest.len() - text.len(),
            "unexpected text after the closing quote",
        ))
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

    #[test]
    fn a_bad_line_is_reported_by_name_and_column_never_by_its_value() {
        for (text, column, problem) in [
            ("TOKEN=\"ghp_one\" ghp_two\n", 17, "unexpected text"),
            ("TOKEN='ghp_one'ghp_two\n", 16, "unexpected text"),
            ("  TOKEN=\"ghp\\q_one\"\n", 13, "unknown escape"),
            ("TOKEN=\"ghp_one\n", 7, "unterminated double quote"),
            ("TOKEN='ghp_one\n", 7, "unterminated single quote"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(!e.problem.contains("ghp"), "{text:?}: {}", e.problem);
            let want = format!("the value of TOKEN, column {column}: {problem}");
            assert!(
                e.problem.starts_with(&want),
                "{text:?}: {} (want {want})",
                e.problem
            );
        }
        let e = parse("ghp_secret_without_equals\n").unwrap_err();
        assert!(!e.problem.contains("ghp"), "{}", e.problem);
    }
}
