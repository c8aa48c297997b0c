//! The walk over the bytes: one recursive-descent reader for every [`Dialect`].

use crate::{
    Builder, DepthLimit, Dialect, Error, ErrorKind, Grammar, NameTable, Number, NumberKind,
};

/// Reads one JSON document, building its value with `builder`.
///
/// Leading and trailing whitespace (space, tab, LF, CR) is allowed; anything else after the value
/// is [`ErrorKind::TrailingData`].
///
/// # Errors
/// The first problem in reading order, as an [`Error`] converted into the builder's error type,
/// or the error [`Builder::number`] returned.
pub fn parse<B: Builder>(
    text: &str,
    dialect: &Dialect,
    builder: &mut B,
) -> Result<B::Value, B::Error> {
    let mut p = Parser {
        text,
        b: text.as_bytes(),
        pos: 0,
        dialect,
        builder,
    };
    p.skip_ws();
    let v = p.value(0)?;
    p.skip_ws();
    if p.pos != p.b.len() {
        return Err(p.err(ErrorKind::TrailingData).into());
    }
    Ok(v)
}

struct Parser<'t, 'd, 'b, B> {
    text: &'t str,
    b: &'t [u8],
    pos: usize,
    dialect: &'d Dialect,
    builder: &'b mut B,
}

impl<B: Builder> Parser<'_, '_, '_, B> {
    const fn err(&self, kind: ErrorKind) -> Error {
        Error {
            kind,
            offset: self.pos,
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

    /// Consumes `byte`, or names what stands there instead.
    fn expect(&mut self, byte: u8) -> Result<(), Error> {
        match self.peek() {
            Some(c) if c == byte => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(self.err(ErrorKind::UnexpectedByte)),
            None => Err(self.err(ErrorKind::UnexpectedEnd)),
        }
    }

    /// After an element: `,` (another follows) or `close` (the container ends).
    fn comma_or(&mut self, close: u8) -> Result<bool, Error> {
        self.skip_ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(false)
            }
            Some(_) => Err(self.err(ErrorKind::ExpectedCommaOr(close))),
            None => Err(self.err(ErrorKind::UnexpectedEnd)),
        }
    }

    /// A value whose first byte is at `self.pos`, inside `depth` arrays and objects.
    fn value(&mut self, depth: usize) -> Result<B::Value, B::Error> {
        if let DepthLimit::Values(max) = self.dialect.depth
            && depth > max
        {
            return Err(self.err(ErrorKind::TooDeep).into());
        }
        let python = self.dialect.grammar == Grammar::Python;
        let Some(c) = self.peek() else {
            return Err(self.err(ErrorKind::UnexpectedEnd).into());
        };
        let literal = |p: &mut Self, word: &[u8]| {
            if p.eat_literal(word) {
                Ok(())
            } else {
                Err(p.err(ErrorKind::InvalidLiteral))
            }
        };
        match c {
            b'{' | b'[' => {
                if let DepthLimit::Containers(max) = self.dialect.depth
                    && depth >= max
                {
                    return Err(self.err(ErrorKind::TooDeep).into());
                }
                self.pos += 1;
                if c == b'{' {
                    self.object(depth + 1)
                } else {
                    self.array(depth + 1)
                }
            }
            b'"' => {
                self.pos += 1;
                let s = self.string()?;
                Ok(self.builder.string(s))
            }
            b'n' => {
                literal(self, b"null")?;
                Ok(self.builder.null())
            }
            b't' => {
                literal(self, b"true")?;
                Ok(self.builder.boolean(true))
            }
            b'f' => {
                literal(self, b"false")?;
                Ok(self.builder.boolean(false))
            }
            b'N' if python => self.non_finite(b"NaN", f64::NAN),
            b'I' if python => self.non_finite(b"Infinity", f64::INFINITY),
            b'-' if python && self.b[self.pos..].starts_with(b"-Infinity") => {
                self.non_finite(b"-Infinity", f64::NEG_INFINITY)
            }
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.err(ErrorKind::UnexpectedByte).into()),
        }
    }

    /// Python's `NaN`, `Infinity` or `-Infinity`, which `word` names.
    fn non_finite(&mut self, word: &[u8], x: f64) -> Result<B::Value, B::Error> {
        let offset = self.pos;
        let literal = self.text.get(offset..offset + word.len());
        if literal.map(str::as_bytes) != Some(word) {
            return Err(self.err(ErrorKind::InvalidLiteral).into());
        }
        self.pos += word.len();
        self.builder.number(Number {
            literal: literal.unwrap_or_default(),
            offset,
            kind: NumberKind::Float(x),
        })
    }

    /// The members of an object whose `{` has been consumed.
    fn object(&mut self, depth: usize) -> Result<B::Value, B::Error> {
        let mut entries: Vec<(String, B::Value)> = Vec::new();
        // A hash lookup per key: a scan of `entries` made an object of n keys cost O(n²)
        // (issue 14 §2).
        let mut keys = NameTable::default();
        self.elements(b'}', |p| {
            let key_at = p.pos;
            p.expect(b'"')?;
            let key = p.string()?;
            // Refused at the key, before its value is read: the first problem in reading order.
            if keys.insert(&key, entries.len(), |i| &entries[i].0).is_err() {
                return Err(Error {
                    kind: ErrorKind::DuplicateKey,
                    offset: key_at,
                }
                .into());
            }
            p.skip_ws();
            p.expect(b':')?;
            p.skip_ws();
            let v = p.value(depth)?;
            entries.push((key, v));
            Ok(())
        })?;
        Ok(self.builder.object(entries))
    }

    /// The elements of an array whose `[` has been consumed.
    fn array(&mut self, depth: usize) -> Result<B::Value, B::Error> {
        let mut items = Vec::new();
        self.elements(b']', |p| {
            items.push(p.value(depth)?);
            Ok(())
        })?;
        Ok(self.builder.array(items))
    }

    /// Reads the comma-separated elements of an array or object, each with `element` (which
    /// starts after any whitespace), through the `close` bracket.
    fn elements(
        &mut self,
        close: u8,
        mut element: impl FnMut(&mut Self) -> Result<(), B::Error>,
    ) -> Result<(), B::Error> {
        self.skip_ws();
        if self.peek() == Some(close) {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            element(self)?;
            if !self.comma_or(close)? {
                return Ok(());
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

    /// A number literal: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`. Where a fraction or
    /// exponent has no digits, [`Grammar::Rfc8259`] refuses the literal and [`Grammar::Python`]
    /// ends it before the `.` or `e`, as `NUMBER_RE` does.
    fn number(&mut self) -> Result<B::Value, B::Error> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err(ErrorKind::BadNumber).into()),
        }
        let int_digits = self.pos - int_start;
        let strict = self.dialect.grammar == Grammar::Rfc8259;
        let mut is_float = false;
        if self.peek() == Some(b'.') {
            if matches!(self.b.get(self.pos + 1), Some(b'0'..=b'9')) {
                self.pos += 1;
                self.digits();
                is_float = true;
            } else if strict {
                self.pos += 1;
                return Err(self.err(ErrorKind::BadNumber).into());
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() > 0 {
                is_float = true;
            } else if strict {
                return Err(self.err(ErrorKind::BadNumber).into());
            } else {
                // Python's regex stops before the 'e'; what follows is then trailing data.
                self.pos = save;
            }
        }
        let at_start = |kind| Error {
            kind,
            offset: start,
        };
        // Every byte of the literal is ASCII, so these are character boundaries.
        let literal = self
            .text
            .get(start..self.pos)
            .ok_or(at_start(ErrorKind::BadNumber))?;
        let kind = if is_float {
            let x = literal
                .parse()
                .map_err(|_| at_start(ErrorKind::BadNumber))?;
            NumberKind::Float(x)
        } else {
            if self
                .dialect
                .max_int_digits
                .is_some_and(|max| int_digits > max)
            {
                return Err(at_start(ErrorKind::IntegerTooLong).into());
            }
            NumberKind::Integer
        };
        self.builder.number(Number {
            literal,
            offset: start,
            kind,
        })
    }

    fn hex4(&mut self) -> Result<u16, Error> {
        let Some(h) = self.b.get(self.pos..self.pos + 4) else {
            return Err(self.err(ErrorKind::BadUnicodeEscape));
        };
        let mut v: u16 = 0;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(self.err(ErrorKind::BadUnicodeEscape)),
            };
            v = (v << 4) | u16::from(d);
        }
        self.pos += 4;
        Ok(v)
    }

    /// The rest of a string whose opening `"` has been consumed.
    fn string(&mut self) -> Result<String, Error> {
        let mut out = String::new();
        loop {
            // Copy the run of plain bytes at once (the text is valid UTF-8 already, and the run
            // stops only at ASCII bytes, so it ends on a character boundary).
            let run_start = self.pos;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(
                self.text
                    .get(run_start..self.pos)
                    .ok_or_else(|| self.err(ErrorKind::UnexpectedByte))?,
            );
            let Some(c) = self.peek() else {
                return Err(self.err(ErrorKind::UnterminatedString));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(e) = self.peek() else {
                        return Err(self.err(ErrorKind::UnterminatedString));
                    };
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
                            self.pos += 1;
                            out.push(self.unicode_escape()?);
                            continue;
                        }
                        _ => return Err(self.err(ErrorKind::BadEscape)),
                    }
                    self.pos += 1;
                }
                _ => return Err(self.err(ErrorKind::ControlCharacter)),
            }
        }
    }

    /// The character of a `\u` escape (a surrogate pair is two escapes), after the `u`.
    fn unicode_escape(&mut self) -> Result<char, Error> {
        let lone = Error {
            kind: ErrorKind::LoneSurrogate,
            offset: self.pos - 2,
        };
        let hi = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&hi) {
            if self.b.get(self.pos..self.pos + 2) != Some(b"\\u") {
                return Err(lone);
            }
            self.pos += 2;
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return Err(lone);
            }
            0x10000 + ((u32::from(hi) - 0xD800) << 10) + (u32::from(lo) - 0xDC00)
        } else if (0xDC00..0xE000).contains(&hi) {
            return Err(lone);
        } else {
            u32::from(hi)
        };
        char::from_u32(code).ok_or(Error {
            kind: ErrorKind::BadEscape,
            offset: lone.offset,
        })
    }
}

#[cfg(test)]
mod tests;
