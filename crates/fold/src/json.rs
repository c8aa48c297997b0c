//! JSON in Python's dialect, because pyfolds' index and `manifest_hash` are defined by what
//! CPython's `json` module reads and writes.
//!
//! Why not `serde_json`: three facts of the reference implementation need control that a general
//! JSON library does not give.
//! - `manifest_hash` is SHA-256 of `json.dumps(metadata, sort_keys=True, separators=(",", ":"))`
//!   with `ensure_ascii=True`: non-ASCII as lowercase `\uXXXX` (surrogate pairs above the BMP) and
//!   floats in Python's `repr` form (`0.1`, `1e-07`, `1e+16`, `1.0`). Integers are arbitrary
//!   precision in Python, so they are kept as their decimal text here.
//! - The index itself is `ensure_ascii=False`, insertion-ordered, so a byte-identical writer must
//!   keep key order.
//! - Python reads (and writes) `NaN`, `Infinity` and `-Infinity`.
//!
//! The parser is strict where Python's is ambiguous: duplicate keys, lone surrogates and nesting
//! deeper than [`MAX_DEPTH`] are refused ([`JsonErrorKind`]). Reading is the workspace's one
//! strict JSON reader ([`strict_json`], in its [`Python`](strict_json::Grammar::Python) grammar);
//! this module builds fold's [`Value`]s from it and writes them back as Python does.

use std::fmt::Write as _;

use crate::error::JsonErrorKind;

/// Deepest nesting of arrays and objects the parser accepts (bounds recursion on untrusted input).
pub const MAX_DEPTH: usize = 128;

/// Longest integer literal accepted, in digits (CPython's `sys.int_info.default_max_str_digits`).
pub const MAX_INT_DIGITS: usize = 4300;

/// A JSON object: key / value pairs in insertion order, keys unique.
pub type Map = Vec<(String, Value)>;

/// A JSON value as Python's `json` module sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null` (`None`).
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer literal, in canonical decimal form (no leading zeros, no `-0`).
    Int(String),
    /// A literal with a fraction or exponent, or `NaN` / `Infinity`: a Python `float`.
    Float(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, insertion-ordered.
    Object(Map),
}

impl Value {
    /// The value of `key` when `self` is an object holding it.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Self::Object(map) => map_get(map, key),
            _ => None,
        }
    }

    /// The integer as `u64`, when it is a non-negative integer that fits.
    #[must_use]
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Self::Int(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// The string, when `self` is one.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }

    /// Python truthiness (`if value:`), which pyfolds uses for optional hashes.
    #[must_use]
    pub fn is_truthy(&self) -> bool {
        match self {
            Self::Null => false,
            Self::Bool(b) => *b,
            Self::Int(s) => s != "0",
            Self::Float(f) => *f != 0.0,
            Self::String(s) => !s.is_empty(),
            Self::Array(a) => !a.is_empty(),
            Self::Object(o) => !o.is_empty(),
        }
    }

    /// An integer value.
    #[must_use]
    pub fn from_u64(n: u64) -> Self {
        Self::Int(n.to_string())
    }

    /// Serializes like `json.dumps(self, separators=(",", ":"), ensure_ascii=..., sort_keys=...)`.
    #[must_use]
    pub fn to_python_json(&self, ensure_ascii: bool, sort_keys: bool) -> String {
        let mut out = String::new();
        write_value(&mut out, self, ensure_ascii, sort_keys);
        out
    }
}

/// The value of `key` in an object: a scan, for the few fixed keys a reader asks for. Lookups
/// that repeat per key or per chunk must not use it (see `FoldReader`, which indexes names once).
#[must_use]
pub fn map_get<'a>(map: &'a Map, key: &str) -> Option<&'a Value> {
    map.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Sets `key` like a Python `dict` assignment: replaces the value in place when the key exists,
/// appends otherwise (so insertion order matches pyfolds').
pub fn map_set(map: &mut Map, key: &str, value: Value) {
    if let Some(slot) = map.iter_mut().find(|(k, _)| k == key) {
        slot.1 = value;
    } else {
        map.push((key.to_owned(), value));
    }
}

/// Python's `repr(float)` as `json.dumps` writes it (`NaN`, `Infinity`, `-Infinity` for the
/// non-finite values).
#[must_use]
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, as CPython's repr does; only the layout
    // differs. "d.ddde[-]X" -> digits and decimal exponent.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    // CPython `float_repr_style == 'short'`: decpt = exp + 1; scientific when decpt <= -4 or
    // decpt > 16.
    let decpt = exp + 1;
    if !(-4 < decpt && decpt <= 16) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..decpt.unsigned_abs() {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let point = usize::try_from(decpt).unwrap_or(0);
        if digits.len() <= point {
            out.push_str(&digits);
            for _ in digits.len()..point {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
    out
}

fn write_string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            // ensure_ascii=True escapes everything outside ' '..='~' (so DEL too).
            c if ensure_ascii && !(' '..='~').contains(&c) => {
                let mut units = [0_u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_value(out: &mut String, v: &Value, ensure_ascii: bool, sort_keys: bool) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(s) => out.push_str(s),
        Value::Float(f) => out.push_str(&python_float_repr(*f)),
        Value::String(s) => write_string(out, s, ensure_ascii),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, ensure_ascii, sort_keys);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            let mut entries: Vec<&(String, Value)> = map.iter().collect();
            if sort_keys {
                // Python sorts str keys by code point; UTF-8 byte order is the same order.
                entries.sort_by(|a, b| a.0.cmp(&b.0));
            }
            for (i, (k, val)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k, ensure_ascii);
                out.push(':');
                write_value(out, val, ensure_ascii, sort_keys);
            }
            out.push('}');
        }
    }
}

/// A parse failure at a byte position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?} at byte {position}")]
pub struct ParseError {
    /// What went wrong.
    pub kind: JsonErrorKind,
    /// Byte offset in the text.
    pub position: usize,
    /// The shared reader's refusal this was mapped from.
    #[source]
    pub source: strict_json::Error,
}

impl From<strict_json::Error> for ParseError {
    fn from(source: strict_json::Error) -> Self {
        use strict_json::ErrorKind as K;
        let kind = match source.kind {
            K::UnexpectedEnd | K::UnterminatedString => JsonErrorKind::UnexpectedEnd,
            K::TrailingData => JsonErrorKind::TrailingData,
            K::BadNumber | K::IntegerTooLong => JsonErrorKind::BadNumber,
            K::BadEscape | K::BadUnicodeEscape => JsonErrorKind::BadEscape,
            K::LoneSurrogate => JsonErrorKind::LoneSurrogate,
            K::ControlCharacter => JsonErrorKind::ControlCharacter,
            K::DuplicateKey => JsonErrorKind::DuplicateKey,
            K::TooDeep => JsonErrorKind::TooDeep,
            // UnexpectedByte, InvalidLiteral, ExpectedCommaOr and any kind added later: a byte
            // that cannot stand where it stands.
            _ => JsonErrorKind::UnexpectedByte,
        };
        Self {
            kind,
            position: source.offset,
            source,
        }
    }
}

/// Python's `json.loads`, stricter where Python is ambiguous (see the module docs).
const DIALECT: strict_json::Dialect = strict_json::Dialect {
    grammar: strict_json::Grammar::Python,
    depth: strict_json::DepthLimit::Containers(MAX_DEPTH),
    max_int_digits: Some(MAX_INT_DIGITS),
};

/// Builds [`Value`]s: integers keep their decimal text, objects their order.
struct Build;

impl strict_json::Builder for Build {
    type Value = Value;
    type Error = strict_json::Error;

    fn null(&mut self) -> Value {
        Value::Null
    }

    fn boolean(&mut self, value: bool) -> Value {
        Value::Bool(value)
    }

    fn number(&mut self, number: strict_json::Number<'_>) -> Result<Value, strict_json::Error> {
        Ok(match number.kind {
            strict_json::NumberKind::Float(x) => Value::Float(x),
            // Canonical decimal form: Python reads `-0` as the integer 0.
            strict_json::NumberKind::Integer if number.magnitude() == "0" => {
                Value::Int("0".to_owned())
            }
            strict_json::NumberKind::Integer => Value::Int(number.literal.to_owned()),
        })
    }

    fn string(&mut self, value: String) -> Value {
        Value::String(value)
    }

    fn array(&mut self, items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    fn object(&mut self, entries: Map) -> Value {
        Value::Object(entries)
    }
}

/// Parses JSON text as Python's `json.loads` does, with the refusals listed in the module docs.
///
/// # Errors
/// [`ParseError`] with the kind and byte position of the first problem.
pub fn parse(text: &str) -> Result<Value, ParseError> {
    strict_json::parse(text, &DIALECT, &mut Build).map_err(ParseError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        // Values and their CPython 3.11 repr.
        let cases: &[(f64, &str)] = &[
            (0.1, "0.1"),
            (1e-7, "1e-07"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123_456_789.123, "123456789.123"),
            (1_700_000_000.123_456_7, "1700000000.1234567"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (-0.0, "-0.0"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
            (12_345_678_901_234_567.0, "1.2345678901234568e+16"),
        ];
        for (x, want) in cases {
            assert_eq!(python_float_repr(*x), *want, "{x:e}");
        }
    }

    #[test]
    fn ensure_ascii_escapes_like_python() {
        let v = Value::String("é\u{7f}\u{1F600}\"\n\u{1}".to_owned());
        assert_eq!(
            v.to_python_json(true, false),
            r#""\u00e9\u007f\ud83d\ude00\"\n\u0001""#
        );
        assert_eq!(
            v.to_python_json(false, false),
            "\"é\u{7f}\u{1F600}\\\"\\n\\u0001\""
        );
    }

    #[test]
    fn parse_then_dump_sorted_matches_python() {
        let text = r#"{"b":[1,2.50,-0,1E2,"x\u00e9\ud83d\ude00"],"a":{"z":null,"y":true},"c":NaN}"#;
        let v = parse(text).unwrap();
        assert_eq!(
            v.to_python_json(true, true),
            r#"{"a":{"y":true,"z":null},"b":[1,2.5,0,100.0,"x\u00e9\ud83d\ude00"],"c":NaN}"#
        );
    }

    #[test]
    fn fail_duplicate_keys_lone_surrogates_and_depth_are_refused() {
        let kind = |t: &str| parse(t).unwrap_err().kind;
        assert_eq!(kind(r#"{"a":1,"a":2}"#), JsonErrorKind::DuplicateKey);
        assert_eq!(kind(r#""\ud800""#), JsonErrorKind::LoneSurrogate);
        assert_eq!(kind(r#""\udc00""#), JsonErrorKind::LoneSurrogate);
        assert_eq!(kind(&"[".repeat(200)), JsonErrorKind::TooDeep);
        assert_eq!(kind("01"), JsonErrorKind::TrailingData);
        assert_eq!(kind("\"a\u{1}\""), JsonErrorKind::ControlCharacter);
        assert_eq!(kind("1."), JsonErrorKind::TrailingData);
        assert_eq!(kind(""), JsonErrorKind::UnexpectedEnd);
    }
}
