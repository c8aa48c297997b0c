//! The tensor index (the TRUENO_NATIVE section of `.apr` and `.ald` files): where every aligned
//! tensor or array lies in the payload, its element type, shape, strides and checksum. Byte layout
//! in `docs/zerocopy.md` §2.

use std::collections::HashMap;

use envelope_core::codec::{Reader, Writer};
use envelope_core::{Error, Format, FormatError, Result, Section};

use crate::dtype::{BackendHint, DType};

/// Every tensor starts at a multiple of this many bytes from the payload, and the payload starts
/// at a multiple of it in the file (covers AVX-512 loads and cache lines).
pub const ALIGNMENT: u64 = 64;

/// Most dimensions a tensor may have.
pub const MAX_DIMS: usize = 8;

/// Bytes at the end of the index body that belong to the envelope (its `prefix_crc32c`).
pub const PREFIX_CRC_LEN: usize = 4;

/// The smallest encoded entry (one dimension, empty name), used to bound `tensor_count` by the
/// bytes present before anything is allocated.
const MIN_ENTRY_LEN: usize = 8 + 4 + 2 * 8 + 8 + 8 + 4 + 2;

/// 64-bit FNV-1a of `name`'s UTF-8 bytes: the `name_hash` of 003 §9.2.
#[must_use]
pub fn fnv1a64(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// One aligned tensor (or dataset array).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorEntry {
    /// The tensor's name (a dataset column's name for arrays).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Size of each dimension, outermost first.
    pub shape: Vec<u64>,
    /// Step between neighbours of each dimension, in elements (row-major: the last is 1).
    pub strides: Vec<u64>,
    /// The alignment the tensor was laid out for (32 or 64); offsets are always multiples of 64.
    pub alignment: u8,
    /// SIMD backend hint.
    pub backend: BackendHint,
    /// Offset of the first byte from the start of the payload (a multiple of [`ALIGNMENT`]).
    pub offset: u64,
    /// Bytes the tensor spans.
    pub size_bytes: u64,
    /// CRC-32C of those bytes: lets a reader verify one tensor without reading the others.
    pub crc32c: u32,
}

impl TensorEntry {
    /// Number of elements (the product of the shape).
    #[must_use]
    pub fn len(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the strides are the row-major ones of the shape (no gaps, last dimension fastest).
    #[must_use]
    pub fn is_contiguous(&self) -> bool {
        self.strides == row_major_strides(&self.shape).unwrap_or_default()
    }

    /// The payload byte range.
    #[must_use]
    pub fn range(&self) -> core::ops::Range<u64> {
        self.offset..self.offset + self.size_bytes
    }
}

/// Row-major strides of `shape` in elements, or `None` if they overflow a u64.
#[must_use]
pub fn row_major_strides(shape: &[u64]) -> Option<Vec<u64>> {
    let mut strides = vec![0u64; shape.len()];
    let mut step = 1u64;
    for (stride, &dim) in strides.iter_mut().zip(shape).rev() {
        *stride = step;
        step = step.checked_mul(dim.max(1))?;
    }
    Some(strides)
}

/// Elements a tensor of `shape` with `strides` spans: 0 if any dimension is 0, else
/// `1 + sum((shape[i] - 1) * strides[i])`; `None` on overflow.
fn span_elements(shape: &[u64], strides: &[u64]) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape
        .iter()
        .zip(strides)
        .try_fold(1u64, |span, (&dim, &stride)| {
            span.checked_add((dim - 1).checked_mul(stride)?)
        })
}

/// The validated tensor index of one file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TensorIndex {
    entries: Vec<TensorEntry>,
    by_name: HashMap<String, usize>,
}

fn malformed(reason: &'static str) -> Error {
    Error::InvalidFormat(FormatError::MalformedBlock {
        section: Section::TensorIndex,
        reason,
    })
}

/// The index's fields, read through the envelope's codec; a short read means an entry runs past
/// the end of the index.
struct Cursor<'a>(Reader<'a>);

impl<'a> Cursor<'a> {
    fn field<T>(&mut self, read: impl FnOnce(&mut Reader<'a>) -> Option<T>) -> Result<T> {
        read(&mut self.0).ok_or_else(|| malformed("an entry runs past the end of the index"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        self.field(|reader| reader.take(n))
    }

    fn u8(&mut self) -> Result<u8> {
        self.field(Reader::u8)
    }

    fn u16(&mut self) -> Result<u16> {
        self.field(Reader::u16)
    }

    fn u32(&mut self) -> Result<u32> {
        self.field(Reader::u32)
    }

    fn u64(&mut self) -> Result<u64> {
        self.field(Reader::u64)
    }

    /// The bytes not read yet.
    fn rest(&self) -> &'a [u8] {
        self.0.rest()
    }
}

impl TensorIndex {
    /// An index of `entries` in this order.
    ///
    /// # Errors
    /// `InvalidFormat` (`MalformedBlock`) for any rule of `docs/zerocopy.md` §2 the entries break
    /// (duplicate names, misaligned, overlapping or loosely packed ranges, sizes that disagree
    /// with shape and strides, ...).
    pub fn new(entries: Vec<TensorEntry>) -> Result<Self> {
        let mut by_name = HashMap::with_capacity(entries.len());
        let mut end = 0u64;
        for (position, entry) in entries.iter().enumerate() {
            validate_entry(entry)?;
            // Packed: each tensor at the first 64-byte boundary at or after the previous one's
            // end, so the padding between tensors is under 64 bytes and checking that it is zero
            // costs O(tensors), whatever the payload's size.
            if Some(entry.offset) != end.checked_next_multiple_of(ALIGNMENT) {
                return Err(malformed(
                    "a tensor does not start at the first 64-byte boundary after the previous one",
                ));
            }
            end = entry.offset + entry.size_bytes;
            if by_name.insert(entry.name.clone(), position).is_some() {
                return Err(malformed("two tensors have the same name"));
            }
        }
        Ok(Self { entries, by_name })
    }

    /// The tensors in payload order.
    #[must_use]
    pub fn entries(&self) -> &[TensorEntry] {
        &self.entries
    }

    /// The tensor called `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&TensorEntry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    /// The position of the tensor called `name`.
    #[must_use]
    pub fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Number of tensors.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes the payload needs: the end of the last tensor.
    #[must_use]
    pub fn payload_len(&self) -> u64 {
        self.entries
            .last()
            .map_or(0, |entry| entry.offset + entry.size_bytes)
    }

    /// The padding after tensor `position`: the bytes between its end and the next tensor's
    /// start (under 64 of them), empty after the last one.
    #[must_use]
    pub fn padding_after(&self, position: usize) -> core::ops::Range<u64> {
        let Some(entry) = self.entries.get(position) else {
            return 0..0;
        };
        let end = entry.offset + entry.size_bytes;
        let next = self
            .entries
            .get(position + 1)
            .map_or(end, |next| next.offset);
        end..next
    }

    /// Checks that `payload` is exactly what this index lays out: `payload_len` bytes long, with
    /// zero bytes between the tensors (docs/zerocopy.md §2). The tensors' own bytes are covered by
    /// their CRC-32C; this covers every other byte, so none goes unchecked. Reads under 64 bytes
    /// per tensor.
    ///
    /// # Errors
    /// `InvalidFormat`: `SizeMismatch` for a payload of another length; `MalformedBlock` for a
    /// non-zero padding byte.
    pub fn check_payload(&self, payload: &[u8]) -> Result<()> {
        if payload.len() as u64 != self.payload_len() {
            return Err(envelope_core::FormatError::SizeMismatch {
                what: "payload length against the end of the last tensor in the tensor index",
                declared: self.payload_len(),
                found: payload.len() as u64,
            }
            .into());
        }
        for position in 0..self.entries.len() {
            let range = self.padding_after(position);
            // In range: the padding lies between two tensors of a payload of payload_len bytes.
            let start = usize::try_from(range.start).unwrap_or(usize::MAX);
            let end = usize::try_from(range.end).unwrap_or(usize::MAX);
            if !payload.get(start..end).is_some_and(is_zero) {
                return Err(malformed("non-zero padding between tensors"));
            }
        }
        Ok(())
    }

    /// Lays out tensors of the given names, types and shapes one after the other, each at the next
    /// multiple of [`ALIGNMENT`], with row-major strides; checksums are zero until
    /// [`TensorIndex::set_crc32c`].
    ///
    /// # Errors
    /// As [`TensorIndex::new`], and `Usage` if a size overflows a u64.
    pub fn plan<'n>(
        tensors: impl IntoIterator<Item = (&'n str, DType, &'n [u64])>,
        backend: BackendHint,
    ) -> Result<Self> {
        let overflow = || Error::InvalidArgument("a tensor's size overflows a u64");
        let mut entries = Vec::new();
        let mut at = 0u64;
        for (name, dtype, shape) in tensors {
            let strides = row_major_strides(shape).ok_or_else(overflow)?;
            let size_bytes = shape
                .iter()
                .try_fold(dtype.size() as u64, |bytes, &dim| bytes.checked_mul(dim))
                .ok_or_else(overflow)?;
            let offset = at
                .checked_next_multiple_of(ALIGNMENT)
                .ok_or_else(overflow)?;
            at = offset.checked_add(size_bytes).ok_or_else(overflow)?;
            entries.push(TensorEntry {
                name: name.to_owned(),
                dtype,
                shape: shape.to_vec(),
                strides,
                alignment: 64,
                backend,
                offset,
                size_bytes,
                crc32c: 0,
            });
        }
        Self::new(entries)
    }

    /// Sets the checksum of tensor `position` (from its bytes, `crc32c::crc32c`).
    ///
    /// # Errors
    /// `Usage` if there is no such tensor.
    pub fn set_crc32c(&mut self, position: usize, crc: u32) -> Result<()> {
        let len = self.entries.len() as u64;
        self.entries
            .get_mut(position)
            .ok_or(Error::OutOfRange {
                what: "tensor",
                index: position as u64,
                len,
            })?
            .crc32c = crc;
        Ok(())
    }

    /// The index body for a file of `format`, with `padding` zero bytes before the 4-byte
    /// `prefix_crc32c` the envelope writer fills in (padding is how the writer puts the payload
    /// on a 64-byte boundary of the file).
    ///
    /// # Errors
    /// `Usage` if a type does not exist in `format`'s table, or a name is longer than 65,535
    /// bytes, or there are more than `u32::MAX` tensors.
    pub fn encode(&self, format: Format, padding: usize) -> Result<Vec<u8>> {
        let count = u32::try_from(self.entries.len()).map_err(|_| Error::TooLarge {
            what: "tensors in the index",
            size: self.entries.len() as u64,
            max: u32::MAX.into(),
        })?;
        let mut out = Vec::new();
        let mut writer = Writer::new(&mut out);
        writer.u32(count);
        for entry in &self.entries {
            let dtype = entry.dtype.code(format).ok_or(Error::InvalidArgument(
                "this element type does not exist in the file format's table",
            ))?;
            let name_len = u16::try_from(entry.name.len()).map_err(|_| Error::TooLarge {
                what: "a tensor name's length in bytes",
                size: entry.name.len() as u64,
                max: u16::MAX.into(),
            })?;
            let ndims = u8::try_from(entry.shape.len()).unwrap_or(u8::MAX);
            writer
                .u64(fnv1a64(&entry.name))
                .u8(dtype)
                .u8(ndims)
                .u8(entry.alignment)
                .u8(entry.backend.code());
            for value in entry.shape.iter().chain(&entry.strides) {
                writer.u64(*value);
            }
            writer
                .u64(entry.offset)
                .u64(entry.size_bytes)
                .u32(entry.crc32c)
                .u16(name_len)
                .bytes(entry.name.as_bytes());
        }
        out.resize(out.len() + padding + PREFIX_CRC_LEN, 0);
        Ok(out)
    }

    /// Parses an index body of a `format` file (including its trailing padding and the envelope's
    /// `prefix_crc32c`, which the envelope has checked).
    ///
    /// # Errors
    /// `InvalidFormat` (`MalformedBlock`, naming the rule) for any rule of `docs/zerocopy.md` §2.
    pub fn parse(format: Format, body: &[u8]) -> Result<Self> {
        let entries_end = body
            .len()
            .checked_sub(PREFIX_CRC_LEN)
            .ok_or_else(|| malformed("shorter than its 4-byte prefix_crc32c"))?;
        let mut cursor = Cursor(Reader::new(&body[..entries_end]));
        let count = cursor.u32()?;
        // The count is untrusted: every entry takes at least MIN_ENTRY_LEN bytes.
        if usize::try_from(count).map_or(true, |count| count > cursor.rest().len() / MIN_ENTRY_LEN)
        {
            return Err(malformed("tensor_count exceeds what the index can hold"));
        }
        let mut entries = Vec::with_capacity(cursor.rest().len() / MIN_ENTRY_LEN);
        for _ in 0..count {
            let hash = cursor.u64()?;
            let dtype = DType::from_code(format, cursor.u8()?)
                .ok_or_else(|| malformed("unknown element type"))?;
            let ndims = usize::from(cursor.u8()?);
            if ndims == 0 || ndims > MAX_DIMS {
                return Err(malformed("a tensor has 0 or more than 8 dimensions"));
            }
            let alignment = cursor.u8()?;
            let backend = BackendHint::from_code(cursor.u8()?)
                .ok_or_else(|| malformed("unknown backend hint"))?;
            let mut dims = Vec::with_capacity(2 * ndims);
            for _ in 0..2 * ndims {
                dims.push(cursor.u64()?);
            }
            let strides = dims.split_off(ndims);
            let offset = cursor.u64()?;
            let size_bytes = cursor.u64()?;
            let crc32c = cursor.u32()?;
            let name_len = usize::from(cursor.u16()?);
            let name = std::str::from_utf8(cursor.take(name_len)?)
                .map_err(|_| malformed("a tensor name is not UTF-8"))?
                .to_owned();
            if fnv1a64(&name) != hash {
                return Err(malformed("name_hash is not the FNV-1a of the name"));
            }
            entries.push(TensorEntry {
                name,
                dtype,
                shape: dims,
                strides,
                alignment,
                backend,
                offset,
                size_bytes,
                crc32c,
            });
        }
        if cursor.rest().iter().any(|&byte| byte != 0) {
            return Err(malformed("non-zero bytes after the last entry"));
        }
        if cursor.rest().len() as u64 >= ALIGNMENT {
            return Err(malformed("64 or more padding bytes"));
        }
        Self::new(entries)
    }
}

/// Whether every byte is zero.
fn is_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&byte| byte == 0)
}

fn validate_entry(entry: &TensorEntry) -> Result<()> {
    if entry.shape.is_empty() || entry.shape.len() > MAX_DIMS {
        return Err(malformed("a tensor has 0 or more than 8 dimensions"));
    }
    if entry.strides.len() != entry.shape.len() {
        return Err(malformed("strides and shape differ in length"));
    }
    if !matches!(entry.alignment, 32 | 64) {
        return Err(malformed("alignment is neither 32 nor 64"));
    }
    if !entry.offset.is_multiple_of(ALIGNMENT) {
        return Err(malformed("a tensor does not start on a 64-byte boundary"));
    }
    let span = span_elements(&entry.shape, &entry.strides)
        .and_then(|elements| elements.checked_mul(entry.dtype.size() as u64))
        .ok_or_else(|| malformed("a tensor's extent overflows a u64"))?;
    if span != entry.size_bytes {
        return Err(malformed(
            "size_bytes disagrees with shape, strides and type",
        ));
    }
    if entry.offset.checked_add(entry.size_bytes).is_none() {
        return Err(malformed("a tensor's range overflows a u64"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// FNV-1a 64 known answers (the reference test vectors of the FNV authors).
    #[test]
    fn fnv1a64_known_answers() {
        assert_eq!(fnv1a64(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn plan_aligns_every_tensor_and_uses_row_major_strides() {
        let shapes: [&[u64]; 3] = [&[3], &[2, 5], &[4, 1, 3]];
        let index = TensorIndex::plan(
            [
                ("a", DType::F32, shapes[0]),
                ("b", DType::F16, shapes[1]),
                ("c", DType::I8, shapes[2]),
            ],
            BackendHint::Avx2,
        )
        .unwrap();
        let offsets: Vec<u64> = index.entries().iter().map(|e| e.offset).collect();
        assert_eq!(offsets, [0, 64, 128]);
        assert_eq!(index.get("b").unwrap().strides, [5, 1]);
        assert_eq!(index.get("c").unwrap().strides, [3, 3, 1]);
        assert_eq!(index.payload_len(), 128 + 12);
        assert!(index.entries().iter().all(TensorEntry::is_contiguous));
    }

    #[test]
    fn broken_rules_are_refused_by_name() {
        let good = TensorIndex::plan([("w", DType::F32, &[4u64][..])], BackendHint::Auto).unwrap();
        let body = good.encode(Format::Model, 3).unwrap();
        assert_eq!(TensorIndex::parse(Format::Model, &body).unwrap(), good);
        let reason = |body: &[u8]| {
            TensorIndex::parse(Format::Model, body)
                .unwrap_err()
                .to_string()
        };
        let mut hash = body.clone();
        hash[4] ^= 1;
        assert!(reason(&hash).contains("FNV-1a"));
        let mut count = body.clone();
        count[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(reason(&count).contains("tensor_count"));
        let mut size = body.clone();
        let size_at = 4 + 8 + 4 + 16 + 8;
        size[size_at] = 15;
        assert!(reason(&size).contains("size_bytes"));
        let mut offset = body.clone();
        offset[size_at - 8] = 8;
        assert!(reason(&offset).contains("64-byte"));
        let mut padding = body.clone();
        let len = padding.len();
        padding[len - 5] = 1;
        assert!(reason(&padding).contains("non-zero"));
        assert!(
            TensorIndex::parse(Format::Dataset, &body).is_ok(),
            "f32 is 0 in both tables"
        );
        let duplicate = TensorIndex::new(vec![
            good.entries()[0].clone(),
            TensorEntry {
                offset: 64,
                ..good.entries()[0].clone()
            },
        ]);
        assert!(duplicate.unwrap_err().to_string().contains("same name"));
    }

    proptest! {
        #[test]
        fn encode_then_parse_is_identity(
            tensors in proptest::collection::vec(("[a-z.]{0,12}", 0usize..5, proptest::collection::vec(0u64..6, 1..4)), 0..6),
            padding in 0usize..64,
        ) {
            let dtypes = [DType::F32, DType::F16, DType::Bf16, DType::I8, DType::U8];
            let mut seen = std::collections::HashSet::new();
            let tensors: Vec<_> = tensors.into_iter().filter(|(name, _, _)| seen.insert(name.clone())).collect();
            let index = TensorIndex::plan(
                tensors.iter().map(|(name, dtype, shape)| (name.as_str(), dtypes[*dtype], shape.as_slice())),
                BackendHint::Avx512,
            ).unwrap();
            let body = index.encode(Format::Model, padding).unwrap();
            prop_assert_eq!(TensorIndex::parse(Format::Model, &body).unwrap(), index);
        }

        #[test]
        fn random_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = TensorIndex::parse(Format::Model, &body);
            let _ = TensorIndex::parse(Format::Dataset, &body);
        }
    }
}
