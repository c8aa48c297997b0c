//! SentencePiece `tokenizer.model` files: a Protocol Buffers `ModelProto` (sentencepiece's
//! `sentencepiece_model.proto`), of which GGUF export reads the pieces (text, score, type).
//!
//! The messages are declared by hand with `prost`'s derive (no build script, no protoc) and only
//! the fields used: prost skips the others (trainer and normalizer specs). The top level is
//! walked field by field here, each piece decoded on its own and at most `max` kept, so that a
//! hostile file cannot make the decoder allocate more than the vocabulary it feeds (an empty
//! piece is two bytes on disk but a few dozen in memory); every failure is a typed error naming
//! the file, never a panic.

use prost::Message;

use crate::error::{DecodeError, Error, Result};

const FILE: &str = "tokenizer.model";

/// `ModelProto`, the pieces only (field 1). [`pieces`] walks its top level by hand (to bound
/// memory); the struct states the layout and builds files in tests.
#[derive(Clone, PartialEq, Message)]
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "the layout; tests encode files with it")
)]
pub(crate) struct ModelProto {
    /// `repeated SentencePiece pieces = 1`.
    #[prost(message, repeated, tag = "1")]
    pub(crate) pieces: Vec<SentencePiece>,
}

/// `ModelProto.SentencePiece`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct SentencePiece {
    /// `optional string piece = 1`.
    #[prost(string, optional, tag = "1")]
    pub(crate) piece: Option<String>,
    /// `optional float score = 2`.
    #[prost(float, optional, tag = "2")]
    pub(crate) score: Option<f32>,
    /// `optional Type type = 3 [default = NORMAL]` (an enum is a varint on the wire).
    #[prost(int32, optional, tag = "3")]
    pub(crate) r#type: Option<i32>,
}

/// `SentencePiece.Type` values.
pub(crate) const NORMAL: i32 = 1;
pub(crate) const UNKNOWN: i32 = 2;
pub(crate) const CONTROL: i32 = 3;
pub(crate) const USER_DEFINED: i32 = 4;
pub(crate) const UNUSED: i32 = 5;
pub(crate) const BYTE: i32 = 6;

/// One piece, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Piece {
    pub(crate) text: String,
    pub(crate) score: f32,
    pub(crate) kind: i32,
}

fn malformed(at: usize, reason: &'static str) -> Error {
    Error::ExportSource {
        file: FILE,
        item: format!("byte {at}"),
        reason,
    }
}

fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn take<'a>(bytes: &'a [u8], at: &mut usize, len: u64) -> Option<&'a [u8]> {
    let end = at.checked_add(usize::try_from(len).ok()?)?;
    let slice = bytes.get(*at..end)?;
    *at = end;
    Some(slice)
}

/// The first `max` pieces of the `ModelProto` in `bytes`, and how many the file holds.
///
/// # Errors
/// `ExportSource` naming the byte offset of a malformed top-level field, or the piece that is
/// empty, a duplicate or of an unknown type; `ExportSourceMalformed` with prost's error for a
/// piece that does not decode; `ExportSource` if there is no unknown piece (sentencepiece refuses
/// such a model).
pub(crate) fn pieces(bytes: &[u8], max: usize) -> Result<(Vec<Piece>, usize)> {
    let mut out = Vec::new();
    let mut count = 0usize;
    let mut seen = std::collections::HashSet::new();
    let mut has_unknown = false;
    let mut at = 0usize;
    while at < bytes.len() {
        let start = at;
        let key =
            varint(bytes, &mut at).ok_or_else(|| malformed(start, "a truncated field key"))?;
        let (field, wire) = (key >> 3, key & 7);
        let body = match wire {
            0 => {
                varint(bytes, &mut at).ok_or_else(|| malformed(start, "a truncated varint"))?;
                None
            }
            1 => {
                Some(take(bytes, &mut at, 8).ok_or_else(|| malformed(start, "a truncated field"))?)
            }
            2 => {
                let len =
                    varint(bytes, &mut at).ok_or_else(|| malformed(start, "a truncated length"))?;
                Some(
                    take(bytes, &mut at, len)
                        .ok_or_else(|| malformed(start, "a field past the end of the file"))?,
                )
            }
            5 => {
                Some(take(bytes, &mut at, 4).ok_or_else(|| malformed(start, "a truncated field"))?)
            }
            _ => return Err(malformed(start, "a wire type ModelProto does not use")),
        };
        if field == 0 {
            return Err(malformed(start, "field number 0"));
        }
        if field != 1 {
            continue;
        }
        let Some(body) = body.filter(|_| wire == 2) else {
            return Err(malformed(
                start,
                "pieces (field 1) are not length-delimited",
            ));
        };
        count += 1;
        if out.len() >= max {
            continue;
        }
        let piece = SentencePiece::decode(body).map_err(|source| Error::ExportSourceMalformed {
            file: FILE,
            reason: "a piece is not a SentencePiece message",
            source: DecodeError::Protobuf(source),
        })?;
        let id = out.len();
        let text = piece.piece.unwrap_or_default();
        let kind = piece.r#type.unwrap_or(NORMAL);
        if text.is_empty() {
            return Err(Error::ExportSource {
                file: FILE,
                item: format!("piece {id}"),
                reason: "is empty",
            });
        }
        if !(NORMAL..=BYTE).contains(&kind) {
            return Err(Error::ExportSource {
                file: FILE,
                item: format!("piece {id} ({text:?}) type {kind}"),
                reason: "is not a SentencePiece type",
            });
        }
        if !seen.insert(text.clone()) {
            return Err(Error::ExportSource {
                file: FILE,
                item: format!("piece {id} ({text:?})"),
                reason: "is defined twice",
            });
        }
        has_unknown |= kind == UNKNOWN;
        out.push(Piece {
            text,
            score: piece.score.unwrap_or(0.0),
            kind,
        });
    }
    if !has_unknown && count <= max {
        return Err(Error::ExportSource {
            file: FILE,
            item: "the pieces".to_owned(),
            reason: "have no unknown piece (<unk>), which sentencepiece requires",
        });
    }
    Ok((out, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn model(pieces: &[(&str, f32, i32)]) -> Vec<u8> {
        ModelProto {
            pieces: pieces
                .iter()
                .map(|(p, s, t)| SentencePiece {
                    piece: Some((*p).to_owned()),
                    score: Some(*s),
                    r#type: Some(*t),
                })
                .collect(),
        }
        .encode_to_vec()
    }

    #[test]
    fn pieces_read_back_and_other_fields_are_skipped() {
        let mut bytes = model(&[
            ("<unk>", 0.0, UNKNOWN),
            ("<s>", 0.0, CONTROL),
            ("▁a", -1.5, NORMAL),
        ]);
        // A trainer_spec (field 2, length-delimited) and a varint field 9 are skipped.
        bytes.extend_from_slice(&[0x12, 0x02, 0x08, 0x01, 0x48, 0x05]);
        let (pieces, count) = pieces(&bytes, 10).unwrap();
        assert_eq!(count, 3);
        assert_eq!(pieces[2].text, "▁a");
        assert_eq!(pieces[2].score, -1.5);
        assert_eq!(pieces[1].kind, CONTROL);
        let (first, count) = super::pieces(&bytes, 1).unwrap();
        assert_eq!((first.len(), count), (1, 3));
    }

    #[test]
    fn hostile_bytes_are_typed_errors() {
        let good = model(&[("<unk>", 0.0, UNKNOWN), ("a", 0.0, NORMAL)]);
        for cut in 1..good.len() {
            let _ = pieces(&good[..cut], 10);
        }
        for bad in [
            &[0x0a, 0xff][..],
            &[0x0a, 0x05, 0x01],
            &[0x0b],
            &[0x08, 0x01],
            &[0x0a, 0x02, 0xff, 0xff],
            &[
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ],
        ] {
            let error = pieces(bad, 10).unwrap_err();
            assert!(
                error.to_string().starts_with("Usage: ExportFailed"),
                "{error}"
            );
        }
        let dup = model(&[
            ("<unk>", 0.0, UNKNOWN),
            ("a", 0.0, NORMAL),
            ("a", 0.0, NORMAL),
        ]);
        assert!(pieces(&dup, 10).unwrap_err().to_string().contains("twice"));
        let no_unk = model(&[("a", 0.0, NORMAL)]);
        assert!(
            pieces(&no_unk, 10)
                .unwrap_err()
                .to_string()
                .contains("unknown")
        );
        let bad_type = model(&[("<unk>", 0.0, UNKNOWN), ("a", 0.0, 9)]);
        assert!(pieces(&bad_type, 10).is_err());
    }
}
