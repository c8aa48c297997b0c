//! A small strict JSON (RFC 8259) reader that yields CBOR [`Value`]s directly.
//!
//! Written here instead of using `serde_json` because the commitments depend on details a
//! general-purpose parser decides differently: an integer literal must stay an integer (serde_json
//! silently turns literals beyond 64 bits into floats), a literal with a fraction or exponent is
//! the correctly rounded binary64 value (`str::parse::<f64>`, as Python's `float()`), duplicate
//! object keys are an error rather than "last wins", and `NaN`/`Infinity` are not JSON.

use std::collections::BTreeMap;

use crate::cbor::Value;
use crate::error::Error;

/// Nesting limit.
pub const MAX_JSON_DEPTH: usize = 64;

/// Parses one JSON document.
///
/// Integers become [`Value::Unsigned`] / [`Value::Negative`] and must lie in
/// `[-2^64, 2^64 - 1]`; other numbers become finite [`Value::Float`]s.
///
/// # Errors
/// [`Error::InvalidJson`] with the byte offset; [`Error::NonFinite`] for a float literal that
/// overflows binary64.
///
/// # Examples
/// ```
/// use lineage::cbor::Value;
/// let v = lineage::json::parse(r#"{"seq": 1, "p": 0.5}"#)?;
/// let Value::Map(m) = v else { unreachable!() };
/// assert_eq!(m["seq"], Value::Unsigned(1));
/// assert_eq!(m["p"], Value::Float(0.5));
/// # Ok::<(), lineage::Error>(())
/// ```
pub fn parse(text: &str) -> Result<Value, Error> {
    let mut p = Parser {
        b: text.as_bytes(),
        pos: 0,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.pos != p.b.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    const fn err(&self, reason: &'static str) -> Error {
        Error::InvalidJson {
            offset: self.pos,
            reason,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), Error> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err("unexpected character"))
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> Result<Value, Error> {
        if self.b.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, Error> {
        if depth > MAX_JSON_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::Text(self.string()?)),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected character")),
            None => Err(self.err("unexpected end of input")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Error> {
        self.eat(b'{')?;
        let mut map = BTreeMap::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Map(map));
        }
        loop {
            self.ws();
            let key_at = self.pos;
            let key = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let v = self.value(depth + 1)?;
            if map.insert(key, v).is_some() {
                return Err(Error::InvalidJson {
                    offset: key_at,
                    reason: "duplicate object key",
                });
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Map(map));
                }
                _ => return Err(self.err("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, Error> {
        self.eat(b'[')?;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.err("expected `,` or `]`")),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, Error> {
        let mut v = 0u32;
        for _ in 0..4 {
            let c = self
                .peek()
                .ok_or_else(|| self.err("truncated \\u escape"))?;
            let d = char::from(c)
                .to_digit(16)
                .ok_or_else(|| self.err("invalid \\u escape"))?;
            v = v * 16 + d;
            self.pos += 1;
        }
        Ok(v)
    }

    fn string(&mut self) -> Result<String, Error> {
        self.eat(b'"')?;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The input is a &str and we stopped at ASCII bytes, so this slice is valid UTF-8.
            let chunk = self.b.get(start..self.pos).unwrap_or_default();
            out.push_str(std::str::from_utf8(chunk).map_err(|_| self.err("invalid UTF-8"))?);
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let e = self.peek().ok_or_else(|| self.err("truncated escape"))?;
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
                            let hi = self.hex4()?;
                            let cp = if (0xd800..0xdc00).contains(&hi) {
                                if self.b.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                    return Err(self.err("lone surrogate"));
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return Err(self.err("lone surrogate"));
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            out.push(char::from_u32(cp).ok_or_else(|| self.err("lone surrogate"))?);
                        }
                        _ => return Err(self.err("invalid escape")),
                    }
                }
                Some(_) => return Err(self.err("control character in string")),
                None => return Err(self.err("unterminated string")),
            }
        }
    }

    fn number(&mut self) -> Result<Value, Error> {
        let start = self.pos;
        let neg = self.peek() == Some(b'-');
        if neg {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.pos += 1;
                }
            }
            _ => return Err(self.err("invalid number")),
        }
        let int_end = self.pos;
        let mut is_float = false;
        if self.peek() == Some(b'.') {
            is_float = true;
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("invalid number"));
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            is_float = true;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.err("invalid number"));
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
        }
        let lit = std::str::from_utf8(self.b.get(start..self.pos).unwrap_or_default())
            .map_err(|_| self.err("invalid number"))?;
        if is_float {
            let f: f64 = lit.parse().map_err(|_| self.err("invalid number"))?;
            if !f.is_finite() {
                return Err(Error::NonFinite {
                    field: format!("JSON number at byte {start}"),
                    value: f,
                });
            }
            return Ok(Value::Float(f));
        }
        let digits = std::str::from_utf8(self.b.get(int_start..int_end).unwrap_or_default())
            .map_err(|_| self.err("invalid number"))?;
        let out_of_range = || self.err("integer outside [-2^64, 2^64-1]");
        let mag: u128 = digits.parse().map_err(|_| out_of_range())?;
        if !neg {
            return u64::try_from(mag)
                .map(Value::Unsigned)
                .map_err(|_| out_of_range());
        }
        // -1 - n = -mag  =>  n = mag - 1. "-0" is the integer 0 (as Python's json reads it).
        match mag.checked_sub(1) {
            Some(n) => u64::try_from(n)
                .map(Value::Negative)
                .map_err(|_| out_of_range()),
            None => Ok(Value::Unsigned(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_stay_integers_and_other_numbers_become_floats() -> Result<(), Error> {
        assert_eq!(parse("18446744073709551615")?, Value::Unsigned(u64::MAX));
        assert_eq!(parse("-18446744073709551616")?, Value::Negative(u64::MAX));
        assert_eq!(parse("-0")?, Value::Unsigned(0));
        assert_eq!(parse("1.0")?, Value::Float(1.0));
        assert_eq!(parse("1e2")?, Value::Float(100.0));
        assert_eq!(parse("-0.0")?, Value::Float(-0.0));
        assert_eq!(parse(r#""\u00fc\ud83d\ude00""#)?, Value::text("ü😀"));
        Ok(())
    }

    #[test]
    fn malformed_or_ambiguous_documents_are_refused() {
        for bad in [
            "18446744073709551616",
            "{\"a\":1,\"a\":2}",
            "NaN",
            "Infinity",
            "1e400",
            "01",
            "[1,]",
            "\"\\ud800\"",
            "{} x",
            "",
            "1.",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
