//! Text that came from a file, made safe to print on a terminal.
//!
//! Column names, card fields, license terms, tensor and chunk names and cell values are chosen by
//! whoever wrote the file. Printed raw, an escape sequence among them could clear the screen, set
//! the window title, rewrite earlier lines or hide text (`ESC ] 0 ; ... BEL`, `ESC [ 2 J`), and
//! bidirectional overrides could make a name read differently from its bytes. Human-readable
//! output escapes them; JSON output is already escaped by the JSON encoder.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// Whether `c` must not reach a terminal raw: C0 controls (tab and newline included: a field is
/// printed on one line), DEL, C1 controls, and the Unicode bidirectional formatting characters.
#[must_use]
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every [`is_unsafe`] character written as `\xNN` (below U+0080) or `\u{NNNN}`;
/// borrowed unchanged when there is none. A backslash is doubled only when something was escaped,
/// so ordinary text prints as it is.
#[must_use]
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            let code = u32::from(c);
            if code < 0x80 {
                let _ = write!(out, "\\x{code:02x}");
            } else {
                let _ = write!(out, "\\u{{{code:04x}}}");
            }
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Displays its text through [`escape`]: `format!("{}", Safe(&column.name))`.
#[derive(Debug, Clone, Copy)]
pub struct Safe<'a>(pub &'a str);

impl fmt::Display for Safe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Padding and alignment apply to the escaped text.
        f.pad(&escape(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_text_is_borrowed_unchanged() {
        assert!(matches!(escape("Größe (m²) \\ ok"), Cow::Borrowed(_)));
    }

    #[test]
    fn escape_sequences_and_bidi_overrides_are_neutralized() {
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\x1b[2Jb");
        assert_eq!(escape("title\u{1b}]0;x\u{7}"), "title\\x1b]0;x\\x07");
        assert_eq!(escape("line\nnext\ttab"), "line\\x0anext\\x09tab");
        assert_eq!(escape("c1\u{9b}31m"), "c1\\u{009b}31m");
        assert_eq!(escape("admin\u{202e}txt.exe"), "admin\\u{202e}txt.exe");
        assert_eq!(escape("back\\slash\u{7f}"), "back\\\\slash\\x7f");
    }

    #[test]
    fn every_escaped_output_is_free_of_unsafe_characters() {
        for code in 0..0x3000u32 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            let text = format!("x{c}y");
            assert!(!escape(&text).chars().any(is_unsafe), "U+{code:04x}");
        }
    }

    #[test]
    fn safe_pads_the_escaped_text() {
        assert_eq!(format!("[{:<6}]", Safe("a\u{1}")), "[a\\x01 ]");
    }
}
