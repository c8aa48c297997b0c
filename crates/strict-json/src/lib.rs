//! One strict JSON reading core for the workspace's two JSON inputs: fold's index (CPython's
//! `json` dialect, because pyfolds writes it) and lineage's split definitions and transform
//! chains (RFC 8259, because commitments are hashed from what was read).
//!
//! Both readers refuse what a general JSON library silently decides: the same key twice in one
//! object (ambiguous: Python keeps the last), a `\u` escape naming a lone UTF-16 surrogate (a Rust
//! string cannot hold it), nesting beyond a bound (recursion on untrusted input), and numbers are
//! handed over exactly as written (an integer literal is never widened into a float).
//!
//! # Design: one grammar walk, the values built by the caller
//!
//! The two crates need different values from the same text: fold keeps integers as decimal text
//! (Python's integers are unbounded) and objects in insertion order, lineage builds canonical
//! CBOR values (integers in `[-2^64, 2^64-1]`, finite floats, sorted maps). So this crate owns
//! the walk over the bytes (whitespace, literals, strings and escapes, the number grammar, the
//! duplicate-key and depth checks, the error positions) and hands each finished scalar, array
//! and object to a [`Builder`] the caller implements. Whatever differs between the two inputs is
//! a field of [`Dialect`]: the [`Grammar`] (`NaN`/`Infinity` and where a number literal ends),
//! the [`DepthLimit`], and the longest integer literal. Errors are one typed [`Error`]
//! ([`ErrorKind`] and a byte offset); each caller maps it into its own error enum and keeps it as
//! the cause. A builder may refuse a number (lineage's integer range) with its own error type.
//!
//! Writing JSON is not here: only fold writes it (Python's `json.dumps` layout, in
//! `fold::json`).
//!
//! # Examples
//! ```
//! use strict_json::{Builder, DepthLimit, Dialect, ErrorKind, Grammar, Number};
//!
//! /// Counts the values of a document.
//! struct Count;
//!
//! impl Builder for Count {
//!     type Value = usize;
//!     type Error = strict_json::Error;
//!     fn null(&mut self) -> usize { 1 }
//!     fn boolean(&mut self, _: bool) -> usize { 1 }
//!     fn number(&mut self, _: Number<'_>) -> Result<usize, strict_json::Error> { Ok(1) }
//!     fn string(&mut self, _: String) -> usize { 1 }
//!     fn array(&mut self, items: Vec<usize>) -> usize { 1 + items.iter().sum::<usize>() }
//!     fn object(&mut self, entries: Vec<(String, usize)>) -> usize {
//!         1 + entries.iter().map(|(_, n)| n).sum::<usize>()
//!     }
//! }
//!
//! let dialect = Dialect {
//!     grammar: Grammar::Rfc8259,
//!     depth: DepthLimit::Values(64),
//!     max_int_digits: None,
//! };
//! assert_eq!(strict_json::parse(r#"{"a": [1, 2.5, null]}"#, &dialect, &mut Count)?, 5);
//! let refused = strict_json::parse(r#"{"a": 1, "a": 2}"#, &dialect, &mut Count).unwrap_err();
//! assert_eq!((refused.kind, refused.offset), (ErrorKind::DuplicateKey, 9));
//! # Ok::<(), strict_json::Error>(())
//! ```

mod names;
mod parser;

pub use names::NameTable;
pub use parser::parse;

/// What a reader accepts beyond the structure every JSON text shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// Which literals exist and where a number literal ends.
    pub grammar: Grammar,
    /// How deep arrays and objects may nest.
    pub depth: DepthLimit,
    /// Longest integer literal accepted, in digits ([`ErrorKind::IntegerTooLong`] beyond);
    /// `None` leaves the bound to the [`Builder`].
    pub max_int_digits: Option<usize>,
}

/// The grammar of literals and numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grammar {
    /// RFC 8259: no `NaN` or `Infinity`; a `.` or an exponent marker must be followed by digits,
    /// else [`ErrorKind::BadNumber`] where the digit is missing.
    Rfc8259,
    /// What CPython's `json.loads` reads: `NaN`, `Infinity` and `-Infinity` are floats, and a
    /// number literal ends where Python's `NUMBER_RE`
    /// (`(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?`) stops matching, so `1.` is the integer `1`
    /// followed by an unexpected `.`.
    Python,
}

/// The bound on nesting, on untrusted input read by recursion. The two forms count differently;
/// each is the rule one of the workspace's readers has always applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthLimit {
    /// At most this many arrays and objects open at once: the opening bracket of one more is
    /// refused ([`ErrorKind::TooDeep`] at the bracket).
    Containers(usize),
    /// No value lies inside more than this many arrays and objects: a value (scalar or not) that
    /// starts deeper is refused where it starts, so one more level may open if it stays empty.
    Values(usize),
}

/// A number literal, as written, for the [`Builder`] to convert.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Number<'a> {
    /// The literal's text (`-12`, `1e5`, `NaN`).
    pub literal: &'a str,
    /// Byte offset of its first character in the document.
    pub offset: usize,
    /// Integer or float.
    pub kind: NumberKind,
}

impl Number<'_> {
    /// Byte offset just past the literal.
    #[must_use]
    pub const fn end(&self) -> usize {
        self.offset + self.literal.len()
    }

    /// Whether the literal starts with `-`.
    #[must_use]
    pub fn is_negative(&self) -> bool {
        self.literal.starts_with('-')
    }

    /// The literal without its sign (for an integer: its decimal digits, no leading zero).
    #[must_use]
    pub fn magnitude(&self) -> &str {
        self.literal.strip_prefix('-').unwrap_or(self.literal)
    }
}

/// What a number literal is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NumberKind {
    /// No fraction and no exponent: the digits are in the literal, unconverted.
    Integer,
    /// A fraction or an exponent (or, in [`Grammar::Python`], `NaN` / `Infinity` /
    /// `-Infinity`): the correctly rounded binary64 value, infinite if the literal overflows.
    Float(f64),
}

/// Builds the caller's values as the reader finishes them, innermost first.
pub trait Builder {
    /// The value type built.
    type Value;
    /// The caller's error: the reader's [`Error`] converts into it, and [`Builder::number`] may
    /// return it.
    type Error: From<Error>;

    /// `null`.
    fn null(&mut self) -> Self::Value;
    /// `true` or `false`.
    fn boolean(&mut self, value: bool) -> Self::Value;
    /// A number literal.
    ///
    /// # Errors
    /// Whatever the caller refuses (a range, a non-finite value).
    fn number(&mut self, number: Number<'_>) -> Result<Self::Value, Self::Error>;
    /// A string, escapes decoded.
    fn string(&mut self, value: String) -> Self::Value;
    /// An array.
    fn array(&mut self, items: Vec<Self::Value>) -> Self::Value;
    /// An object: its entries in document order, keys unique.
    fn object(&mut self, entries: Vec<(String, Self::Value)>) -> Self::Value;
}

/// Why a text was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The text ended where a value, a key, `:` or a closing bracket was expected.
    UnexpectedEnd,
    /// A byte that cannot start a value, a key or `:` here.
    UnexpectedByte,
    /// `t`, `f`, `n` (or `N`, `I` in [`Grammar::Python`]) not followed by the rest of the word.
    InvalidLiteral,
    /// After an element, neither `,` nor this closing bracket (`}` or `]`).
    ExpectedCommaOr(u8),
    /// Bytes after the top-level value.
    TrailingData,
    /// The text ended inside a string.
    UnterminatedString,
    /// A raw control character (below U+0020) inside a string.
    ControlCharacter,
    /// A backslash followed by a byte that starts no escape.
    BadEscape,
    /// `\u` not followed by four hexadecimal digits.
    BadUnicodeEscape,
    /// A `\u` escape naming a UTF-16 surrogate that is not half of a pair.
    LoneSurrogate,
    /// A malformed number literal.
    BadNumber,
    /// An integer literal longer than [`Dialect::max_int_digits`].
    IntegerTooLong,
    /// The same key twice in one object.
    DuplicateKey,
    /// Nesting beyond the [`DepthLimit`].
    TooDeep,
}

impl ErrorKind {
    /// A short lowercase description.
    #[must_use]
    pub const fn reason(self) -> &'static str {
        match self {
            Self::UnexpectedEnd => "unexpected end of input",
            Self::UnexpectedByte => "unexpected character",
            Self::InvalidLiteral => "invalid literal",
            Self::ExpectedCommaOr(b'}') => "expected `,` or `}`",
            Self::ExpectedCommaOr(_) => "expected `,` or `]`",
            Self::TrailingData => "trailing characters",
            Self::UnterminatedString => "unterminated string",
            Self::ControlCharacter => "control character in string",
            Self::BadEscape => "invalid escape",
            Self::BadUnicodeEscape => "invalid \\u escape",
            Self::LoneSurrogate => "lone surrogate",
            Self::BadNumber => "invalid number",
            Self::IntegerTooLong => "integer literal too long",
            Self::DuplicateKey => "duplicate object key",
            Self::TooDeep => "nested too deeply",
        }
    }
}

/// A refusal at a byte offset of the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {}", kind.reason())]
pub struct Error {
    /// What is wrong.
    pub kind: ErrorKind,
    /// Where: the offending byte, or the start of the token it belongs to (the key of a
    /// duplicate, the backslash of a lone surrogate, the first of four bad hex digits, the first
    /// character of an over-long integer).
    pub offset: usize,
}
