//! The YAML of an OKF concept's front matter, written the way the reference's bundles are
//! (PyYAML's safe dumper: block style, keys in the order given, Unicode kept, lines folded at
//! 100 columns), so a bundle of ours and one of the reference's differ only where a value
//! does. Only what front matter holds is supported: mappings with plain keys, sequences,
//! strings and integers.
//!
//! A string's style follows PyYAML's own choice: plain when that reads back as the same string,
//! single-quoted when plain would read as something else (`'yes'`, `'1.0'`, a timestamp) or
//! cannot be plain (`'#x'`, `'a: b'`), double-quoted when only escapes can carry it (a tab,
//! a control character) — and always double-quoted when it holds a line break.

use regex::Regex;
use std::sync::LazyLock;

/// A front-matter value.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Str(String),
    Int(i64),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
}

const BEST_WIDTH: usize = 100;
const BREAKS: &[char] = &['\n', '\u{85}', '\u{2028}', '\u{2029}'];
const SPACE_OR_BREAK: &[char] = &[
    '\0', ' ', '\t', '\r', '\n', '\u{85}', '\u{2028}', '\u{2029}',
];

static IMPLICIT: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
        r"^(?:<<)$",
        r"^(?:~|null|Null|NULL|)$",
        r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
        r"^(?:=)$",
    ]
    .iter()
    .map(|r| Regex::new(r).expect("resolver regex"))
    .collect()
});

/// Whether a plain scalar would read back as this string (no implicit type claims it).
fn reads_as_string(s: &str) -> bool {
    !IMPLICIT.iter().any(|r| r.is_match(s))
}

/// Which styles a scalar allows, as PyYAML's analysis decides.
struct Analysis {
    allow_plain: bool,
    allow_single: bool,
}

fn analyze(s: &str) -> Analysis {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return Analysis {
            allow_plain: true,
            allow_single: true,
        };
    }
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let mut preceded_by_ws = true;
    let mut followed_by_ws = chars.len() == 1 || SPACE_OR_BREAK.contains(&chars[1]);
    let (mut previous_space, mut previous_break) = (false, false);
    for (i, &ch) in chars.iter().enumerate() {
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(ch) {
                block_indicators = true;
            }
            if "?:".contains(ch) && followed_by_ws {
                block_indicators = true;
            }
            if ch == '-' && followed_by_ws {
                block_indicators = true;
            }
        } else if (ch == ':' && followed_by_ws) || (ch == '#' && preceded_by_ws) {
            block_indicators = true;
        }
        if BREAKS.contains(&ch) {
            line_breaks = true;
        }
        if !(ch == '\n' || (' '..='~').contains(&ch)) {
            let printable = (ch == '\u{85}'
                || ('\u{A0}'..='\u{D7FF}').contains(&ch)
                || ('\u{E000}'..='\u{FFFD}').contains(&ch)
                || ('\u{10000}'..'\u{10FFFF}').contains(&ch))
                && ch != '\u{FEFF}';
            if !printable {
                special = true;
            }
        }
        if ch == ' ' {
            leading_space |= i == 0;
            trailing_space |= i == chars.len() - 1;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if BREAKS.contains(&ch) {
            leading_break |= i == 0;
            trailing_break |= i == chars.len() - 1;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = SPACE_OR_BREAK.contains(&ch);
        followed_by_ws = i + 2 >= chars.len() || SPACE_OR_BREAK.contains(&chars[i + 2]);
    }
    let mut allow_plain = true;
    let mut allow_single = true;
    if leading_space || leading_break || trailing_space || trailing_break {
        allow_plain = false;
    }
    if break_space {
        allow_plain = false;
        allow_single = false;
    }
    if space_break || special {
        allow_plain = false;
        allow_single = false;
    }
    if line_breaks || block_indicators {
        allow_plain = false;
    }
    Analysis {
        allow_plain,
        allow_single,
    }
}

/// Writes YAML text, tracking the column as PyYAML does for folding.
struct Writer {
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
}

impl Writer {
    fn write(&mut self, data: &str) {
        self.column += data.chars().count();
        self.out.push_str(data);
    }

    fn line_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
        self.whitespace = true;
        self.indention = true;
    }

    fn indent_to(&mut self, indent: usize) {
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.line_break();
        }
        if self.column < indent {
            self.whitespace = true;
            let pad = " ".repeat(indent - self.column);
            self.column = indent;
            self.out.push_str(&pad);
        }
    }

    fn indicator(&mut self, indicator: &str, need_whitespace: bool) {
        let data = if self.whitespace || !need_whitespace {
            indicator.to_owned()
        } else {
            format!(" {indicator}")
        };
        self.whitespace = false;
        self.indention = false;
        self.write(&data);
    }

    fn scalar(&mut self, s: &str, indent: usize) {
        let forced_double = s.contains(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']);
        let a = analyze(s);
        if !forced_double && reads_as_string(s) && a.allow_plain && !s.is_empty() {
            self.plain(s, indent);
        } else if !forced_double && a.allow_single {
            self.single(s, indent);
        } else {
            self.double(s, indent);
        }
    }

    fn plain(&mut self, text: &str, indent: usize) {
        if !self.whitespace {
            self.write(" ");
        }
        self.whitespace = false;
        self.indention = false;
        let chars: Vec<char> = text.chars().collect();
        let (mut spaces, mut start, mut end) = (false, 0, 0);
        while end <= chars.len() {
            let ch = chars.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end && self.column > BEST_WIDTH {
                        self.indent_to(indent);
                        self.whitespace = false;
                        self.indention = false;
                    } else {
                        let data: String = chars[start..end].iter().collect();
                        self.write(&data);
                    }
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ') {
                let data: String = chars[start..end].iter().collect();
                self.write(&data);
                start = end;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
            }
            end += 1;
        }
    }

    fn single(&mut self, text: &str, indent: usize) {
        self.indicator("'", true);
        let chars: Vec<char> = text.chars().collect();
        let (mut spaces, mut start, mut end) = (false, 0, 0);
        while end <= chars.len() {
            let ch = chars.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end
                        && self.column > BEST_WIDTH
                        && start != 0
                        && end != chars.len()
                    {
                        self.indent_to(indent);
                    } else {
                        let data: String = chars[start..end].iter().collect();
                        self.write(&data);
                    }
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ' || c == '\'') && start < end {
                let data: String = chars[start..end].iter().collect();
                self.write(&data);
                start = end;
            }
            if ch == Some('\'') {
                self.write("''");
                start = end + 1;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
            }
            end += 1;
        }
        self.indicator("'", false);
    }

    fn double(&mut self, text: &str, indent: usize) {
        self.indicator("\"", true);
        let chars: Vec<char> = text.chars().collect();
        let (mut start, mut end) = (0usize, 0usize);
        while end <= chars.len() {
            let ch = chars.get(end).copied();
            let escape = ch.is_none_or(|c| {
                "\"\\\u{85}\u{2028}\u{2029}\u{FEFF}".contains(c)
                    || !((' '..='~').contains(&c)
                        || ('\u{A0}'..='\u{D7FF}').contains(&c)
                        || ('\u{E000}'..='\u{FFFD}').contains(&c))
            });
            if escape {
                if start < end {
                    let data: String = chars[start..end].iter().collect();
                    self.write(&data);
                    start = end;
                }
                if let Some(c) = ch {
                    let data = match c {
                        '\0' => "\\0".to_owned(),
                        '\u{7}' => "\\a".to_owned(),
                        '\u{8}' => "\\b".to_owned(),
                        '\t' => "\\t".to_owned(),
                        '\n' => "\\n".to_owned(),
                        '\u{B}' => "\\v".to_owned(),
                        '\u{C}' => "\\f".to_owned(),
                        '\r' => "\\r".to_owned(),
                        '\u{1B}' => "\\e".to_owned(),
                        '"' => "\\\"".to_owned(),
                        '\\' => "\\\\".to_owned(),
                        '\u{85}' => "\\N".to_owned(),
                        '\u{A0}' => "\\_".to_owned(),
                        '\u{2028}' => "\\L".to_owned(),
                        '\u{2029}' => "\\P".to_owned(),
                        c if (c as u32) <= 0xFF => format!("\\x{:02X}", c as u32),
                        c if (c as u32) <= 0xFFFF => format!("\\u{:04X}", c as u32),
                        c => format!("\\U{:08X}", c as u32),
                    };
                    self.write(&data);
                    start = end + 1;
                }
            }
            let fold = end > 0
                && end + 1 < chars.len()
                && (ch == Some(' ') || start >= end)
                && self.column + end.saturating_sub(start) > BEST_WIDTH;
            if fold {
                let mut data: String = chars[start.min(end)..end].iter().collect();
                data.push('\\');
                if start < end {
                    start = end;
                }
                self.write(&data);
                self.indent_to(indent);
                self.whitespace = false;
                self.indention = false;
                if chars.get(start) == Some(&' ') {
                    self.write("\\");
                }
            }
            end += 1;
        }
        self.indicator("\"", false);
    }

    /// A mapping whose keys start at `column`.
    fn map(&mut self, entries: &[(String, Node)], column: usize, first_inline: bool) {
        for (i, (key, value)) in entries.iter().enumerate() {
            if i > 0 || !first_inline {
                if !self.out.is_empty() && !self.out.ends_with('\n') {
                    self.line_break();
                }
                let pad = " ".repeat(column.saturating_sub(self.column));
                self.write(&pad);
            }
            self.whitespace = false;
            self.indention = false;
            self.write(key);
            self.write(":");
            self.value(value, column);
        }
    }

    /// A mapping value (after `key:`), the mapping's keys at `column`.
    fn value(&mut self, value: &Node, column: usize) {
        match value {
            Node::Str(s) => self.scalar(s, column + 2),
            Node::Int(n) => self.write(&format!(" {n}")),
            Node::List(items) if items.is_empty() => self.write(" []"),
            Node::Map(entries) if entries.is_empty() => self.write(" {}"),
            Node::List(items) => {
                for item in items {
                    self.line_break();
                    self.write(&" ".repeat(column));
                    self.write("-");
                    self.whitespace = false;
                    match item {
                        Node::Map(entries) if !entries.is_empty() => {
                            self.write(" ");
                            self.map(entries, column + 2, true);
                        }
                        Node::Str(s) => self.scalar(s, column + 2),
                        Node::Int(n) => self.write(&format!(" {n}")),
                        other => self.value(other, column + 2),
                    }
                }
            }
            Node::Map(entries) => {
                self.line_break();
                self.map(entries, column + 2, false);
            }
        }
    }
}

/// The YAML text of a top-level mapping, ending with a newline.
pub fn dump(entries: &[(String, Node)]) -> String {
    let mut w = Writer {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
    };
    w.map(entries, 0, false);
    w.out.push('\n');
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn title(s: &str) -> String {
        dump(&[("title".into(), Node::Str(s.into()))])
    }

    #[test]
    fn scalars_take_the_style_pyyaml_chooses() {
        for (input, expected) in [
            ("", "title: ''\n"),
            ("yes", "title: 'yes'\n"),
            ("123", "title: '123'\n"),
            ("1.0", "title: '1.0'\n"),
            ("null", "title: 'null'\n"),
            ("~", "title: '~'\n"),
            ("- x", "title: '- x'\n"),
            ("a: b", "title: 'a: b'\n"),
            ("a #b", "title: 'a #b'\n"),
            ("#x", "title: '#x'\n"),
            ("x'y", "title: x'y\n"),
            ("é ünïcode", "title: é ünïcode\n"),
            ("tab\there", "title: \"tab\\there\"\n"),
            ("trail ", "title: 'trail '\n"),
            ("2026-01-01", "title: '2026-01-01'\n"),
            ("@x", "title: '@x'\n"),
            ("a\u{85}b", "title: \"a\\Nb\"\n"),
            ("key: \"q\"", "title: 'key: \"q\"'\n"),
            ("Multi\nline", "title: \"Multi\\nline\"\n"),
            (
                "2026-01-20T14:30:00+01:00",
                "title: '2026-01-20T14:30:00+01:00'\n",
            ),
        ] {
            assert_eq!(title(input), expected, "{input:?}");
        }
    }

    #[test]
    fn long_quoted_values_fold_at_a_hundred_columns() {
        let long = "An [odd] `title` <b> with: colon and a very long tail that goes on and on past the hundred column width limit for sure";
        assert_eq!(
            title(long),
            "title: 'An [odd] `title` <b> with: colon and a very long tail that goes on and on past the hundred column\n  width limit for sure'\n"
        );
    }

    #[test]
    fn nested_blocks_indent_as_pyyaml_does() {
        let doc = dump(&[
            ("tags".into(), Node::List(vec![Node::Str("api".into())])),
            ("empty".into(), Node::List(vec![])),
            (
                "generated".into(),
                Node::Map(vec![("by".into(), Node::Str("theurian/0.5.4".into()))]),
            ),
            (
                "sources".into(),
                Node::List(vec![Node::Map(vec![
                    ("resource".into(), Node::Str("https://x/y".into())),
                    (
                        "theurian_anchor".into(),
                        Node::Map(vec![("line_start".into(), Node::Int(1))]),
                    ),
                ])]),
            ),
        ]);
        assert_eq!(
            doc,
            "tags:\n- api\nempty: []\ngenerated:\n  by: theurian/0.5.4\nsources:\n- resource: https://x/y\n  theurian_anchor:\n    line_start: 1\n"
        );
    }
}
