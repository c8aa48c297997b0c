//! The reader under both grammars and both depth rules, through a builder that prints what it
//! was handed.

use super::*;

/// Writes each value back in a compact form that shows how it was read (`i:` integer literal,
/// `f:` float value).
struct Show;

impl Builder for Show {
    type Value = String;
    type Error = Error;

    fn null(&mut self) -> String {
        "null".to_owned()
    }
    fn boolean(&mut self, value: bool) -> String {
        value.to_string()
    }
    fn number(&mut self, number: Number<'_>) -> Result<String, Error> {
        Ok(match number.kind {
            NumberKind::Integer => format!("i:{}", number.literal),
            NumberKind::Float(x) => format!("f:{x:?}"),
        })
    }
    fn string(&mut self, value: String) -> String {
        format!("{value:?}")
    }
    fn array(&mut self, items: Vec<String>) -> String {
        format!("[{}]", items.join(","))
    }
    fn object(&mut self, entries: Vec<(String, String)>) -> String {
        let entries: Vec<String> = entries.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{{{}}}", entries.join(","))
    }
}

const RFC: Dialect = Dialect {
    grammar: Grammar::Rfc8259,
    depth: DepthLimit::Values(4),
    max_int_digits: None,
};

const PYTHON: Dialect = Dialect {
    grammar: Grammar::Python,
    depth: DepthLimit::Containers(4),
    max_int_digits: Some(5),
};

fn read(text: &str, dialect: &Dialect) -> Result<String, (ErrorKind, usize)> {
    parse(text, dialect, &mut Show).map_err(|e| (e.kind, e.offset))
}

#[test]
fn accepted_documents_are_built_as_written() {
    let cases: &[(&str, &str)] = &[
        (" null ", "null"),
        (
            r#"{"b":[1,-0,2.50,1E2],"a":{}}"#,
            "{b=[i:1,i:-0,f:2.5,f:100.0],a={}}",
        ),
        (r#""x\u00e9\ud83d\ude00\/\n""#, r#""xé😀/\n""#),
        ("[true,false,[]]", "[true,false,[]]"),
        ("-12345", "i:-12345"),
    ];
    for (text, want) in cases {
        for dialect in [&RFC, &PYTHON] {
            assert_eq!(read(text, dialect).as_deref(), Ok(*want), "{text}");
        }
    }
    assert_eq!(
        read("[NaN,-Infinity]", &PYTHON).as_deref(),
        Ok("[f:NaN,f:-inf]")
    );
}

#[test]
fn refusals_name_the_kind_and_offset() {
    use ErrorKind::*;
    // Refused alike under both grammars: (text, kind, offset).
    let both: &[(&str, ErrorKind, usize)] = &[
        ("", UnexpectedEnd, 0),
        ("01", TrailingData, 1),
        ("-x", BadNumber, 1),
        ("nul", InvalidLiteral, 0),
        (r#"{"a":1,"a":["#, DuplicateKey, 7),
        (r#"{"a" 1}"#, UnexpectedByte, 5),
        (r#"{"a":1"#, UnexpectedEnd, 6),
        (r#"{"a":1]"#, ExpectedCommaOr(b'}'), 6),
        ("[1,]", UnexpectedByte, 3),
        ("{1:2}", UnexpectedByte, 1),
        ("\"ab", UnterminatedString, 3),
        ("\"a\\", UnterminatedString, 3),
        ("\"a\u{1}\"", ControlCharacter, 2),
        (r#""\x""#, BadEscape, 2),
        (r#""\u12g4""#, BadUnicodeEscape, 3),
        (r#""\u12"#, BadUnicodeEscape, 3),
        (r#""x\ud800""#, LoneSurrogate, 2),
        (r#""\ud800\u0041""#, LoneSurrogate, 1),
        (r#""\udc00""#, LoneSurrogate, 1),
    ];
    for (text, kind, offset) in both {
        for dialect in [&RFC, &PYTHON] {
            assert_eq!(read(text, dialect), Err((*kind, *offset)), "{text:?}");
        }
    }
    // Where the grammars differ: (text, under RFC 8259, under Python's), `None` where it is read.
    type Refusal = Option<(ErrorKind, usize)>;
    let differ: &[(&str, Refusal, Refusal)] = &[
        ("1.", Some((BadNumber, 2)), Some((TrailingData, 1))),
        (
            "[1.]",
            Some((BadNumber, 3)),
            Some((ExpectedCommaOr(b']'), 2)),
        ),
        ("1e+", Some((BadNumber, 3)), Some((TrailingData, 1))),
        ("NaN", Some((UnexpectedByte, 0)), None),
        ("-Infinity", Some((BadNumber, 1)), None),
        ("Nan", Some((UnexpectedByte, 0)), Some((InvalidLiteral, 0))),
        ("123456", None, Some((IntegerTooLong, 0))),
    ];
    for (text, rfc, python) in differ {
        for (dialect, want) in [(&RFC, rfc), (&PYTHON, python)] {
            let got = read(text, dialect);
            match want {
                Some(want) => assert_eq!(got, Err(*want), "{:?}: {text:?}", dialect.grammar),
                None => assert!(got.is_ok(), "{:?}: {text:?} {got:?}", dialect.grammar),
            }
        }
    }
}

#[test]
fn the_two_depth_rules_count_as_documented() {
    let nest = |n: usize, inner: &str| format!("{}{inner}{}", "[".repeat(n), "]".repeat(n));
    // Containers(4): four brackets open at once, never five, whatever they hold.
    assert!(read(&nest(4, "1"), &PYTHON).is_ok());
    assert!(read(&nest(4, ""), &PYTHON).is_ok());
    assert_eq!(read(&nest(5, ""), &PYTHON), Err((ErrorKind::TooDeep, 4)));
    // Values(4): no value inside five containers; a fifth may open if it stays empty.
    assert!(read(&nest(4, "1"), &RFC).is_ok());
    assert!(read(&nest(5, ""), &RFC).is_ok());
    assert_eq!(read(&nest(5, "1"), &RFC), Err((ErrorKind::TooDeep, 5)));
    assert_eq!(read(&"[".repeat(6), &RFC), Err((ErrorKind::TooDeep, 5)));
    assert_eq!(
        read(r#"{"a":{"b":{"c":{"d":{"e":1}}}}}"#, &RFC),
        Err((ErrorKind::TooDeep, 25))
    );
}

#[test]
fn a_builder_error_is_returned_as_is() {
    struct NoNumbers;
    #[derive(Debug, PartialEq)]
    enum Refused {
        Json(Error),
        Number(usize),
    }
    impl From<Error> for Refused {
        fn from(e: Error) -> Self {
            Self::Json(e)
        }
    }
    impl Builder for NoNumbers {
        type Value = ();
        type Error = Refused;
        fn null(&mut self) {}
        fn boolean(&mut self, _: bool) {}
        fn number(&mut self, number: Number<'_>) -> Result<(), Refused> {
            Err(Refused::Number(number.end()))
        }
        fn string(&mut self, _: String) {}
        fn array(&mut self, _: Vec<()>) {}
        fn object(&mut self, _: Vec<(String, ())>) {}
    }
    assert_eq!(
        parse("[null, -12]", &RFC, &mut NoNumbers),
        Err(Refused::Number(10))
    );
    assert!(matches!(
        parse("[null", &RFC, &mut NoNumbers),
        Err(Refused::Json(Error {
            kind: ErrorKind::UnexpectedEnd,
            offset: 5
        }))
    ));
}
