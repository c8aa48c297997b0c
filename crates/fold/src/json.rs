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
//! deeper than [`MAX_DEPTH`] are refused ([`JsonErrorKind`]).

use std::fmt::Write as _;

use crate::error::JsonErrorKind;
use crate::names::NameTable;

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
}

/// Parses JSON text as Python's `json.loads` does, with the refusals listed in the module docs.
///
/// # Errors
/// [`ParseError`] with the kind and byte position of the first problem.
pub fn parse(text: &str) -> Result<Value, ParseError> {
    let mut p = Parser {
        b: text.as_bytes(),
        pos: 0,
    };
    p.skip_ws();
    let v = p.value(0)?;
    p.skip_ws();
    if p.pos != p.b.len() {
        return Err(p.err(JsonErrorKind::TrailingData));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, kind: JsonErrorKind) -> ParseError {
        ParseError {
            kind,
            position: self.pos,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat_literal(&mut self, lit: &[u8]) -> bool {
        if self.b.get(self.pos..self.pos + lit.len()) == Some(lit) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), ParseError> {
        match self.peek() {
            Some(c) if c == byte => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(self.err(JsonErrorKind::UnexpectedByte)),
            None => Err(self.err(JsonErrorKind::UnexpectedEnd)),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        let Some(c) = self.peek() else {
            return Err(self.err(JsonErrorKind::UnexpectedEnd));
        };
        match c {
            b'{' => {
                if depth >= MAX_DEPTH {
                    return Err(self.err(JsonErrorKind::TooDeep));
                }
                self.pos += 1;
                self.object(depth + 1)
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return Err(self.err(JsonErrorKind::TooDeep));
                }
                self.pos += 1;
                self.array(depth + 1)
            }
            b'"' => {
                self.pos += 1;
                Ok(Value::String(self.string()?))
            }
            b'n' if self.eat_literal(b"null") => Ok(Value::Null),
            b't' if self.eat_literal(b"true") => Ok(Value::Bool(true)),
            b'f' if self.eat_literal(b"false") => Ok(Value::Bool(false)),
            b'N' if self.eat_literal(b"NaN") => Ok(Value::Float(f64::NAN)),
            b'I' if self.eat_literal(b"Infinity") => Ok(Value::Float(f64::INFINITY)),
            b'-' if self.eat_literal(b"-Infinity") => Ok(Value::Float(f64::NEG_INFINITY)),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.err(JsonErrorKind::UnexpectedByte)),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        let mut map: Map = Vec::new();
        // The duplicate-key check is a hash lookup: a scan of `map` per key made an object of n
        // keys cost O(n²) (issue 14 §2).
        let mut keys = NameTable::default();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_ws();
            let key_pos = self.pos;
            self.expect(b'"')?;
            let key = self.string()?;
            if keys.insert(&key, map.len(), |i| &map[i].0).is_err() {
                return Err(ParseError {
                    kind: JsonErrorKind::DuplicateKey,
                    position: key_pos,
                });
            }
            self.skip_ws();
            self.expect(b':')?;
            self.skip_ws();
            let v = self.value(depth)?;
            map.push((key, v));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                Some(_) => return Err(self.err(JsonErrorKind::UnexpectedByte)),
                None => return Err(self.err(JsonErrorKind::UnexpectedEnd)),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                Some(_) => return Err(self.err(JsonErrorKind::UnexpectedByte)),
                None => return Err(self.err(JsonErrorKind::UnexpectedEnd)),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Python's NUMBER_RE: `(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?`.
    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err(JsonErrorKind::BadNumber)),
        }
        let int_end = self.pos;
        let mut is_float = false;
        if self.peek() == Some(b'.') && matches!(self.b.get(self.pos + 1), Some(b'0'..=b'9')) {
            self.pos += 1;
            self.digits();
            is_float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                // Python's regex simply stops before the 'e'; what follows is then trailing data.
                self.pos = save;
            } else {
                is_float = true;
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.pos])
            .map_err(|_| self.err(JsonErrorKind::BadNumber))?;
        if is_float {
            let f: f64 = text.parse().map_err(|_| ParseError {
                kind: JsonErrorKind::BadNumber,
                position: start,
            })?;
            return Ok(Value::Float(f));
        }
        if int_end - int_start > MAX_INT_DIGITS {
            return Err(ParseError {
                kind: JsonErrorKind::BadNumber,
                position: start,
            });
        }
        let digits = &text[int_start - start..];
        if digits == "0" {
            return Ok(Value::Int("0".to_owned()));
        }
        Ok(Value::Int(text.to_owned()))
    }

    fn hex4(&mut self) -> Result<u16, ParseError> {
        let Some(h) = self.b.get(self.pos..self.pos + 4) else {
            return Err(self.err(JsonErrorKind::BadEscape));
        };
        let mut v: u16 = 0;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(self.err(JsonErrorKind::BadEscape)),
            };
            v = (v << 4) | u16::from(d);
        }
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let mut out = String::new();
        loop {
            // Copy the run of plain bytes at once (the text is valid UTF-8 already).
            let run_start = self.pos;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            if self.pos > run_start {
                let run = std::str::from_utf8(&self.b[run_start..self.pos])
                    .map_err(|_| self.err(JsonErrorKind::UnexpectedByte))?;
                out.push_str(run);
            }
            let Some(c) = self.peek() else {
                return Err(self.err(JsonErrorKind::UnexpectedEnd));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.err(JsonErrorKind::UnexpectedEnd));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let esc_pos = self.pos - 2;
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if self.b.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                    return Err(ParseError {
                                        kind: JsonErrorKind::LoneSurrogate,
                                        position: esc_pos,
                                    });
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(ParseError {
                                        kind: JsonErrorKind::LoneSurrogate,
                                        position: esc_pos,
                                    });
                                }
                                0x10000
                                    + ((u32::from(hi) - 0xD800) << 10)
                                    + (u32::from(lo) - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return Err(ParseError {
                                    kind: JsonErrorKind::LoneSurrogate,
                                    position: esc_pos,
                                });
                            } else {
                                u32::from(hi)
                            };
                            let ch = char::from_u32(code).ok_or(ParseError {
                                kind: JsonErrorKind::BadEscape,
                                position: esc_pos,
                            })?;
                            out.push(ch);
                        }
                        _ => {
                            self.pos -= 1;
                            return Err(self.err(JsonErrorKind::BadEscape));
                        }
                    }
                }
                _ => return Err(self.err(JsonErrorKind::ControlCharacter)),
            }
        }
    }
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
