//! The small lexer and path readers the source-tree rules (`layers`, `file_rules`) share.
//!
//! The sources are read by this small lexer rather than with `syn`: adding `syn` (with `full`
//! and `visit`) and `proc-macro2` as dev-dependencies changed the features of the copies the
//! derive macros use, so every proc macro and every crate built with one compiled again (measured
//! on a warm target: `thiserror-impl`, `hadris-iso`, … a rebuild of most of the tree) — too high a
//! price for one test. The lexer drops comments (doc comments included), strings and character
//! literals, so that only code counts; `super::` is resolved against the module it is written in
//! (inline `mod tests { … }` included), `use crate::{a, b::C}` counts both, and paths inside macro
//! calls and attributes (`format!(…, crate::fetch::redact(url))`, `#[error(…)]`) count like any
//! other code.

use std::collections::BTreeMap;
use std::path::Path;

/// A token of Rust source that matters here: an identifier, or one punctuation character (`::`
/// is two `:`), with its line. Comments, strings, characters and numbers are left out.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Ident(String, usize),
    Punct(char, usize),
}

impl Token {
    pub fn is(&self, c: char) -> bool {
        matches!(self, Token::Punct(p, _) if *p == c)
    }

    pub fn ident(&self) -> Option<&str> {
        match self {
            Token::Ident(name, _) => Some(name),
            Token::Punct(..) => None,
        }
    }

    pub fn line(&self) -> usize {
        match self {
            Token::Ident(_, line) | Token::Punct(_, line) => *line,
        }
    }
}

/// The tokens of `text`, without comments, string, byte-string, raw-string and character
/// literals, lifetimes and numbers.
pub fn lex(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&chars, i + 1, &mut line);
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{2192}'), else a lifetime or label ('a).
            if at(i + 1) == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // String prefixes: b"…", c"…", r"…", r#"…"#, br"…", cr#"…"#.
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            let hashes = chars[i..].iter().take_while(|c| **c == '#').count();
            if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                i = skip_string(&chars, i + 1, &mut line);
            } else if raw && at(i + hashes) == '"' {
                i = skip_raw(&chars, i + hashes + 1, hashes, &mut line);
            } else if word == "b" && at(i) == '\'' {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1 + usize::from(chars[i] == '\\');
                }
                i += 1;
            } else if word == "r" && hashes == 1 {
                // A raw identifier: r#type.
                i += 1;
            } else {
                tokens.push(Token::Ident(word, line));
            }
        } else {
            tokens.push(Token::Punct(c, line));
            i += 1;
        }
    }
    tokens
}

/// Past the closing quote of a string whose body starts at `i` (escapes honoured).
fn skip_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < chars.len() && chars[i] != '"' {
        *line += usize::from(chars[i] == '\n');
        i += 1 + usize::from(chars[i] == '\\');
    }
    i + 1
}

/// Past the closing `"###` of a raw string with `hashes` hashes whose body starts at `i`.
fn skip_raw(chars: &[char], mut i: usize, hashes: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        if chars[i] == '"'
            && chars[i + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        *line += usize::from(chars[i] == '\n');
        i += 1;
    }
    i
}

/// `#[path = "…"] mod name;` in `text`: name → the path given.
pub fn path_attributes(text: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for (n, _) in text.match_indices("#[path") {
        let rest = &text[n..];
        let Some(open) = rest.find('"') else { continue };
        let Some(close) = rest[open + 1..].find('"') else {
            continue;
        };
        let path = &rest[open + 1..open + 1 + close];
        let after = &rest[open + close + 2..];
        let after = after.trim_start().trim_start_matches(']').trim_start();
        let after = after.strip_prefix("pub ").unwrap_or(after).trim_start();
        if let Some(decl) = after.strip_prefix("mod ") {
            let name: String = decl
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.insert(name, path.to_owned());
        }
    }
    found
}

/// The path starting at token `i` (`first`): its segments, and the index after the last `::`
/// followed by an identifier (where a `{` group may start).
pub fn path_at(tokens: &[Token], i: usize, first: &str) -> (Vec<String>, usize) {
    let mut segments = vec![first.to_owned()];
    let mut j = i + 1;
    while tokens.get(j).is_some_and(|t| t.is(':')) && tokens.get(j + 1).is_some_and(|t| t.is(':')) {
        match tokens.get(j + 2).and_then(Token::ident) {
            Some(next) => {
                segments.push(next.to_owned());
                j += 3;
            }
            None => {
                j += 2;
                break;
            }
        }
    }
    (segments, j)
}

/// The first identifier of each comma-separated item of the `{ … }` group opening at `open`
/// (`self` included: it names the prefix, which `top_of` resolves the same).
pub fn group_heads(tokens: &[Token], open: usize) -> Vec<(String, usize)> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut expecting = true;
    for token in &tokens[open..] {
        if token.is('{') {
            depth += 1;
            if depth == 1 {
                continue;
            }
        } else if token.is('}') {
            depth -= 1;
            if depth == 0 {
                break;
            }
        } else if depth == 1 && token.is(',') {
            expecting = true;
            continue;
        }
        if depth == 1
            && expecting
            && let Some(name) = token.ident()
        {
            heads.push((name.to_owned(), token.line()));
            expecting = false;
        }
    }
    heads
}

/// `file` relative to the repository's root, as messages name it.
pub fn relative(file: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}
