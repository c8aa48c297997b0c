//! The JSON index at the end of the file (002 §6): parsing into validated types, the
//! `manifest_hash` and `chunk_hashes` rules, and serialization in pyfolds' exact byte form.

use sha2::{Digest, Sha256};

use crate::ecc::Ecc;
use crate::error::{Error, Result, SchemaProblem};
use crate::format::{CHUNK_HEADER_LEN, FORMAT_NAME, FORMAT_VERSION, SUPPORTED_VERSIONS};
use crate::json::{self, Map, Value, map_get};
use strict_json::NameTable;

/// One entry of `chunks` (002 §6), with every field present and of the right type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkEntry {
    /// `name`.
    pub name: String,
    /// `ctype`: 4 ASCII characters.
    pub ctype: [u8; 4],
    /// `flags` (compression; checked against known values when the chunk is read).
    pub flags: u64,
    /// `offset`: absolute offset of the chunk header.
    pub offset: u64,
    /// `header_len`: 32 in v1.
    pub header_len: u64,
    /// `comp_len`.
    pub comp_len: u64,
    /// `uncomp_len`.
    pub uncomp_len: u64,
    /// `crc32c` of the stored payload.
    pub crc32c: u32,
    /// `sha256` of the stored payload.
    pub sha256: [u8; 32],
    /// `ecc_algo`.
    pub ecc: Ecc,
    /// `ecc_len`.
    pub ecc_len: u64,
}

impl ChunkEntry {
    /// `ctype` as text (it is ASCII by construction).
    #[must_use]
    pub fn ctype_str(&self) -> &str {
        std::str::from_utf8(&self.ctype).unwrap_or("????")
    }

    /// End of the chunk's bytes (header, payload and ECC), `None` on overflow.
    #[must_use]
    pub fn end(&self) -> Option<u64> {
        self.offset
            .checked_add(u64::from(CHUNK_HEADER_LEN))?
            .checked_add(self.comp_len)?
            .checked_add(self.ecc_len)
    }

    fn to_value(&self) -> Value {
        // Key order of pyfolds' FoldWriter.add_chunk.
        Value::Object(vec![
            ("name".into(), Value::String(self.name.clone())),
            ("ctype".into(), Value::String(self.ctype_str().to_owned())),
            ("flags".into(), Value::from_u64(self.flags)),
            ("offset".into(), Value::from_u64(self.offset)),
            ("header_len".into(), Value::from_u64(self.header_len)),
            ("comp_len".into(), Value::from_u64(self.comp_len)),
            ("uncomp_len".into(), Value::from_u64(self.uncomp_len)),
            ("crc32c".into(), Value::from_u64(u64::from(self.crc32c))),
            ("sha256".into(), Value::String(hex::encode(self.sha256))),
            ("ecc_algo".into(), Value::String(self.ecc.to_string())),
            ("ecc_len".into(), Value::from_u64(self.ecc_len)),
        ])
    }
}

/// The parsed index.
#[derive(Debug, Clone, PartialEq)]
pub struct Index {
    /// `version` (pyfolds defaults a missing one to "1.0.0").
    pub version: String,
    /// `created_at_unix` (a float in pyfolds' files; `Null` when absent).
    pub created_at_unix: Value,
    /// `metadata`, insertion-ordered (empty when absent).
    pub metadata: Map,
    /// `chunks`, in file order of the index.
    pub chunks: Vec<ChunkEntry>,
}

fn schema(chunk: Option<usize>, field: &'static str, problem: SchemaProblem) -> Error {
    Error::IndexSchema {
        chunk,
        field,
        problem,
    }
}

fn field<'a>(obj: &'a Value, chunk: Option<usize>, key: &'static str) -> Result<&'a Value> {
    obj.get(key)
        .ok_or(schema(chunk, key, SchemaProblem::Missing))
}

fn u64_field(obj: &Value, chunk: usize, key: &'static str) -> Result<u64> {
    match field(obj, Some(chunk), key)? {
        v @ Value::Int(_) => v
            .as_u64()
            .ok_or(schema(Some(chunk), key, SchemaProblem::OutOfRange)),
        _ => Err(schema(Some(chunk), key, SchemaProblem::WrongType)),
    }
}

fn str_field<'a>(obj: &'a Value, chunk: usize, key: &'static str) -> Result<&'a str> {
    field(obj, Some(chunk), key)?
        .as_str()
        .ok_or(schema(Some(chunk), key, SchemaProblem::WrongType))
}

/// Parses 64 lowercase hex digits (the form `hashlib.hexdigest()` gives and pyfolds compares).
#[must_use]
pub fn parse_sha256_hex(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let mut out = [0_u8; 32];
    for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
        let nib = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        *o = (nib(pair[0])? << 4) | nib(pair[1])?;
    }
    Some(out)
}

impl Index {
    /// Validates a parsed index value (002 §6).
    ///
    /// # Errors
    /// [`Error::IndexSchema`], [`Error::UnsupportedFormat`], [`Error::DuplicateChunk`].
    pub fn from_value(v: &Value) -> Result<Self> {
        if !matches!(v, Value::Object(_)) {
            return Err(schema(None, "(root)", SchemaProblem::WrongType));
        }
        match v.get("format") {
            Some(Value::String(s)) if s == FORMAT_NAME => {}
            Some(other) => {
                return Err(Error::UnsupportedFormat {
                    found: other.to_python_json(false, false),
                });
            }
            None => {
                return Err(Error::UnsupportedFormat {
                    found: "null".to_owned(),
                });
            }
        }
        let version = match v.get("version") {
            None => "1.0.0".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(schema(None, "version", SchemaProblem::WrongType)),
        };
        let metadata = match v.get("metadata") {
            None => Vec::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(schema(None, "metadata", SchemaProblem::WrongType)),
        };
        match map_get(&metadata, "chunk_hashes") {
            None | Some(Value::Object(_)) => {}
            Some(_) => return Err(schema(None, "chunk_hashes", SchemaProblem::WrongType)),
        }
        let items = match v.get("chunks") {
            None => &[][..],
            Some(Value::Array(a)) => a.as_slice(),
            Some(_) => return Err(schema(None, "chunks", SchemaProblem::WrongType)),
        };
        let mut chunks: Vec<ChunkEntry> = Vec::with_capacity(items.len());
        let mut names = NameTable::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            if !matches!(item, Value::Object(_)) {
                return Err(schema(Some(i), "(entry)", SchemaProblem::WrongType));
            }
            let name = str_field(item, i, "name")?.to_owned();
            if names.insert(&name, i, |p| &chunks[p].name).is_err() {
                return Err(Error::DuplicateChunk { name });
            }
            let ctype_s = str_field(item, i, "ctype")?;
            let ctype: [u8; 4] = ctype_s
                .as_bytes()
                .try_into()
                .ok()
                .filter(|c: &[u8; 4]| c.is_ascii())
                .ok_or(schema(Some(i), "ctype", SchemaProblem::BadValue))?;
            let sha256 = parse_sha256_hex(str_field(item, i, "sha256")?).ok_or(schema(
                Some(i),
                "sha256",
                SchemaProblem::BadValue,
            ))?;
            let ecc = Ecc::parse(str_field(item, i, "ecc_algo")?).ok_or(schema(
                Some(i),
                "ecc_algo",
                SchemaProblem::BadValue,
            ))?;
            let crc32c = u32::try_from(u64_field(item, i, "crc32c")?)
                .map_err(|_| schema(Some(i), "crc32c", SchemaProblem::OutOfRange))?;
            chunks.push(ChunkEntry {
                name,
                ctype,
                flags: u64_field(item, i, "flags")?,
                offset: u64_field(item, i, "offset")?,
                header_len: u64_field(item, i, "header_len")?,
                comp_len: u64_field(item, i, "comp_len")?,
                uncomp_len: u64_field(item, i, "uncomp_len")?,
                crc32c,
                sha256,
                ecc,
                ecc_len: u64_field(item, i, "ecc_len")?,
            });
        }
        Ok(Self {
            version,
            created_at_unix: v.get("created_at_unix").cloned().unwrap_or(Value::Null),
            metadata,
            chunks,
        })
    }

    /// Whether pyfolds reads this `version` without a warning.
    #[must_use]
    pub fn version_supported(&self) -> bool {
        SUPPORTED_VERSIONS.contains(&self.version.as_str())
    }

    /// The entry named `name`: a scan of `chunks`, for one-off lookups. [`crate::FoldReader`]
    /// indexes the names once at open and looks them up in O(1).
    #[must_use]
    pub fn chunk(&self, name: &str) -> Option<&ChunkEntry> {
        self.chunks.iter().find(|c| c.name == name)
    }

    /// A table of the chunk names, for O(1) lookups by name (names are unique once parsed).
    pub(crate) fn name_table(&self) -> NameTable {
        let mut table = NameTable::with_capacity(self.chunks.len());
        for (i, c) in self.chunks.iter().enumerate() {
            // A repeated name (possible only in an index built by hand) keeps the first entry.
            let _ = table.insert(&c.name, i, |p| &self.chunks[p].name);
        }
        table
    }

    /// Checks `metadata.manifest_hash` when present and truthy (pyfolds only warns; here it is an
    /// error).
    ///
    /// # Errors
    /// [`Error::ManifestHashMismatch`].
    pub fn check_manifest_hash(&self) -> Result<()> {
        let Some(expected) = map_get(&self.metadata, "manifest_hash") else {
            return Ok(());
        };
        if !expected.is_truthy() {
            return Ok(());
        }
        let actual = manifest_hash(&self.metadata);
        match expected {
            Value::String(s) if *s == hex::encode(actual) => Ok(()),
            Value::String(s) => Err(Error::ManifestHashMismatch {
                expected: s.clone(),
                actual,
            }),
            other => Err(Error::ManifestHashMismatch {
                expected: other.to_python_json(false, false),
                actual,
            }),
        }
    }

    /// Checks `metadata.chunk_hashes[name]`, when present and truthy, against each entry's
    /// `sha256` (002 §8.3): one flag per entry of `chunks`, `true` where they disagree. Both sides
    /// are index text, so this is decided once for the whole index, in one pass over each list.
    #[must_use]
    pub fn chunk_hashes_mismatches(&self) -> Vec<bool> {
        let Some(Value::Object(hashes)) = map_get(&self.metadata, "chunk_hashes") else {
            return vec![false; self.chunks.len()];
        };
        let mut table = NameTable::with_capacity(hashes.len());
        for (i, (name, _)) in hashes.iter().enumerate() {
            // A parsed object has unique keys; in a hand-built one the first wins.
            let _ = table.insert(name, i, |p| &hashes[p].0);
        }
        self.chunks
            .iter()
            .map(|entry| {
                match table
                    .find(&entry.name, |p| &hashes[p].0)
                    .map(|p| &hashes[p].1)
                {
                    Some(v) if v.is_truthy() => {
                        v.as_str() != Some(hex::encode(entry.sha256).as_str())
                    }
                    _ => false,
                }
            })
            .collect()
    }

    /// The index bytes as pyfolds writes them: key order format, version, created_at_unix,
    /// metadata, chunks; `ensure_ascii=False`, separators `(",", ":")`.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let v = Value::Object(vec![
            ("format".into(), Value::String(FORMAT_NAME.into())),
            ("version".into(), Value::String(self.version.clone())),
            ("created_at_unix".into(), self.created_at_unix.clone()),
            ("metadata".into(), Value::Object(self.metadata.clone())),
            (
                "chunks".into(),
                Value::Array(self.chunks.iter().map(ChunkEntry::to_value).collect()),
            ),
        ]);
        v.to_python_json(false, false).into_bytes()
    }

    /// An empty index of the current version.
    #[must_use]
    pub fn new(created_at_unix: f64) -> Self {
        Self {
            version: FORMAT_VERSION.to_owned(),
            created_at_unix: Value::Float(created_at_unix),
            metadata: Vec::new(),
            chunks: Vec::new(),
        }
    }
}

/// SHA-256 of `json.dumps(metadata minus manifest_hash, sort_keys=True, separators=(",", ":"))`
/// with `ensure_ascii=True`.
#[must_use]
pub fn manifest_hash(metadata: &Map) -> [u8; 32] {
    let without: Map = metadata
        .iter()
        .filter(|(k, _)| k != "manifest_hash")
        .cloned()
        .collect();
    let text = Value::Object(without).to_python_json(true, true);
    Sha256::digest(text.as_bytes()).into()
}

/// Parses index text into an [`Index`].
///
/// # Errors
/// [`Error::IndexNotUtf8`], [`Error::IndexJson`], and the errors of [`Index::from_value`].
pub fn parse_index(bytes: &[u8]) -> Result<Index> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::IndexNotUtf8 {
        position: e.valid_up_to() as u64,
    })?;
    let v = json::parse(text).map_err(|e| Error::IndexJson {
        kind: e.kind,
        position: e.position as u64,
        source: e.source,
    })?;
    Index::from_value(&v)
}
