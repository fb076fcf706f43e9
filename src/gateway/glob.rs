//! Glob patterns for tool names (`get_*`, `*_delete`, `file?`): the tool
//! filters of a config file and the tools of a token's grant.
//!
//! Tool names are short and have no path separators, so `*` (any run of
//! characters, empty included) and `?` (one character) are the whole
//! language; everything else matches itself. Matching is linear in the
//! name times the pattern (no backtracking blow-up).

/// One compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    pattern: Vec<char>,
}

impl Glob {
    /// The pattern as written.
    pub(crate) fn new(pattern: &str) -> Self {
        Glob {
            pattern: pattern.chars().collect(),
        }
    }

    /// Whether `name` matches the whole pattern.
    pub(crate) fn matches(&self, name: &str) -> bool {
        let p = &self.pattern;
        let n: Vec<char> = name.chars().collect();
        // The classic two-pointer match with one saved star: on a mismatch
        // the last `*` takes one more character, so each (p, n) pair is
        // visited a bounded number of times.
        let (mut pi, mut ni) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while ni < n.len() {
            match p.get(pi) {
                Some('*') => {
                    star = Some((pi, ni));
                    pi += 1;
                }
                Some(&c) if c == '?' || c == n[ni] => {
                    pi += 1;
                    ni += 1;
                }
                _ => match star {
                    Some((sp, sn)) => {
                        pi = sp + 1;
                        ni = sn + 1;
                        star = Some((sp, sn + 1));
                    }
                    None => return false,
                },
            }
        }
        p[pi..].iter().all(|&c| c == '*')
    }
}

/// Whether any of `globs` matches `name`.
pub(crate) fn any(globs: &[Glob], name: &str) -> bool {
    globs.iter().any(|g| g.matches(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_and_question_marks_match_as_in_a_shell() {
        let cases = [
            ("*", "", true),
            ("*", "anything", true),
            ("get_*", "get_time", true),
            ("get_*", "get_", true),
            ("get_*", "set_time", false),
            ("*_delete", "file_delete", true),
            ("*_delete", "file_delete_all", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("file?", "file1", true),
            ("file?", "file", false),
            ("echo", "echo", true),
            ("echo", "echo2", false),
            (
                "*a*a*a*a*a*b",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                false,
            ),
        ];
        for (p, n, want) in cases {
            assert_eq!(Glob::new(p).matches(n), want, "{p} ~ {n}");
        }
    }
}
