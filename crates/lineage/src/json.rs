//! A small strict JSON (RFC 8259) reader that yields CBOR [`Value`]s directly.
//!
//! Written here instead of using `serde_json` because the commitments depend on details a
//! general-purpose parser decides differently: an integer literal must stay an integer (serde_json
//! silently turns literals beyond 64 bits into floats), a literal with a fraction or exponent is
//! the correctly rounded binary64 value (`str::parse::<f64>`, as Python's `float()`), duplicate
//! object keys are an error rather than "last wins", and `NaN`/`Infinity` are not JSON.
//!
//! The reading itself is the workspace's one strict JSON reader ([`strict_json`], in its
//! [`Rfc8259`](strict_json::Grammar::Rfc8259) grammar); this module builds CBOR values from it.

use crate::cbor::Value;
use crate::error::Error;

/// Nesting limit: no value lies inside more than this many arrays and objects.
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
    strict_json::parse(text, &DIALECT, &mut Build)
}

/// RFC 8259, nesting bounded by [`MAX_JSON_DEPTH`]: no value inside more than that many arrays
/// and objects.
const DIALECT: strict_json::Dialect = strict_json::Dialect {
    grammar: strict_json::Grammar::Rfc8259,
    depth: strict_json::DepthLimit::Values(MAX_JSON_DEPTH),
    // The integer range below bounds integers (a literal over 39 digits cannot fit in a u128).
    max_int_digits: None,
};

/// Builds CBOR values: integers in `[-2^64, 2^64-1]`, finite floats, text-keyed maps.
struct Build;

impl strict_json::Builder for Build {
    type Value = Value;
    type Error = Error;

    fn null(&mut self) -> Value {
        Value::Null
    }

    fn boolean(&mut self, value: bool) -> Value {
        Value::Bool(value)
    }

    fn number(&mut self, number: strict_json::Number<'_>) -> Result<Value, Error> {
        let strict_json::NumberKind::Float(f) = number.kind else {
            return integer(&number);
        };
        if !f.is_finite() {
            return Err(Error::NonFinite {
                field: format!("JSON number at byte {}", number.offset),
                value: f,
            });
        }
        Ok(Value::Float(f))
    }

    fn string(&mut self, value: String) -> Value {
        Value::Text(value)
    }

    fn array(&mut self, items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    fn object(&mut self, entries: Vec<(String, Value)>) -> Value {
        // The reader has refused repeated keys already.
        Value::Map(entries.into_iter().collect())
    }
}

/// An integer literal as a CBOR integer, refused outside `[-2^64, 2^64-1]`.
fn integer(number: &strict_json::Number<'_>) -> Result<Value, Error> {
    let out_of_range = || Error::InvalidJson {
        offset: number.end(),
        reason: "integer outside [-2^64, 2^64-1]",
        source: None,
    };
    // More digits than a u128 holds is out of range too; the parse error says nothing more.
    let mag: u128 = number.magnitude().parse().map_err(|_| out_of_range())?;
    if !number.is_negative() {
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
