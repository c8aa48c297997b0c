//! The content-addressed object store: lineage objects by `(tenant_id, object_type, object_id)`,
//! where `object_id = SHA-256(CBOR_CANONICAL(payload))` as `lineage` computes it and the stored
//! bytes are exactly that canonical CBOR (004 §II.F cross-tenant rule, §II.G `object_id`).
//!
//! Where the bytes live is an [`ObjectBackend`]: a flat namespace of `/`-separated keys with
//! put-if-absent, get, delete and list, which a local directory ([`LocalDir`]) and an object
//! store (`object_store`'s `PutMode::Create`) both provide. Everything about IDs, verification and
//! the key layout is in [`ObjectStore`], once, above the backend.
//!
//! Key layout: `<tenant>/<object_type>/<id[0..2]>/<id>` with the ID in lowercase hex and the
//! tenant percent-encoded (every byte outside `A-Z a-z 0-9 _ -` as `%XX`), so no tenant can name
//! `.`, `..` or a path separator, and two tenants never share a key.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

use lineage::Digest;
use lineage::cbor::{self, Value};
use lineage::hash::sha256;
use lineage::object::{ObjectRef, ObjectType};
use output_file::{Destination, Existing};

use crate::error::{Error, Result};

/// The largest object the store reads back (a lineage object is a few hundred bytes: a split
/// entry, a transform, a snapshot preimage). A larger file is refused before it is read whole.
pub const MAX_OBJECT_BYTES: u64 = 16 << 20;

/// The longest encoded tenant (a file name's limit on every common filesystem).
pub const MAX_TENANT_KEY_BYTES: usize = 255;

/// Where object bytes are kept: a flat namespace of `/`-separated keys (no empty, `.` or `..`
/// segment; [`ObjectStore`] makes every key).
///
/// The contract every implementation keeps: [`put_if_absent`](Self::put_if_absent) never
/// replaces an object, and is durable when it returns; [`get`](Self::get) returns the bytes
/// stored or `None`; [`delete`](Self::delete) of an absent key succeeds.
pub trait ObjectBackend: fmt::Debug + Send + Sync {
    /// Stores `bytes` under `key` unless something is stored there already. Returns whether it
    /// wrote. The write is atomic (a reader sees all of it or nothing) and durable on return.
    ///
    /// # Errors
    /// The backend's I/O failures.
    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> Result<bool>;

    /// The bytes under `key`, or `None` if nothing is stored there. At most `max_bytes + 1`
    /// bytes are read, so the caller can tell an oversized object without reading it whole.
    ///
    /// # Errors
    /// The backend's I/O failures.
    fn get(&self, key: &str, max_bytes: u64) -> Result<Option<Vec<u8>>>;

    /// Removes `key`; nothing stored there is not an error.
    ///
    /// # Errors
    /// The backend's I/O failures.
    fn delete(&self, key: &str) -> Result<()>;

    /// Calls `visit` with every key stored, and with the names of leftovers of interrupted
    /// writes (which are not object keys, so the caller can tell them apart).
    ///
    /// # Errors
    /// The backend's I/O failures.
    fn list(&self, visit: &mut dyn FnMut(&str)) -> Result<()>;
}

/// A local directory: one file per object at `DIR/<key>`, written through `output-file`
/// (temporary file in the same directory, fsync, rename that never replaces, directory fsync).
/// A fan-out directory created for a new object is fsynced into its parent before the object is
/// written, so a committed object is never lost with its directory in a crash.
#[derive(Debug, Clone)]
pub struct LocalDir {
    root: PathBuf,
}

impl LocalDir {
    /// The backend over `root` (created on the first write).
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> PathBuf {
        key.split('/').fold(self.root.clone(), |p, s| p.join(s))
    }

    /// Creates `dir` and every missing parent up to the root's parent, fsyncing each parent
    /// after a child appeared in it.
    fn ensure_dir(&self, dir: &Path) -> Result<()> {
        if dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent() {
            self.ensure_dir(parent)?;
        }
        match fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
            Err(e) => return Err(Error::io(dir)(e)),
        }
        if let Some(parent) = dir.parent() {
            sync_dir(parent)?;
        }
        Ok(())
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io(dir))
}

impl ObjectBackend for LocalDir {
    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> Result<bool> {
        let path = self.path(key);
        if fs::symlink_metadata(&path).is_ok() {
            return Ok(false);
        }
        if let Some(dir) = path.parent() {
            self.ensure_dir(dir)?;
        }
        let destination = Destination::new(&path).existing(Existing::Keep);
        match output_file::write(destination, |w| w.write_all(bytes)) {
            Ok(()) => Ok(true),
            // Another writer stored the same key first: its bytes are the caller's to check.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io(path)(e)),
        }
    }

    fn get(&self, key: &str, max_bytes: u64) -> Result<Option<Vec<u8>>> {
        let path = self.path(key);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path)(e)),
        };
        let mut out = Vec::new();
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(Error::io(&path))?;
        Ok(Some(out))
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path)(e)),
        }
    }

    fn list(&self, visit: &mut dyn FnMut(&str)) -> Result<()> {
        fn walk(dir: &Path, prefix: &str, visit: &mut dyn FnMut(&str)) -> Result<()> {
            let entries = match fs::read_dir(dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(Error::io(dir)(e)),
            };
            for entry in entries {
                let entry = entry.map_err(Error::io(dir))?;
                let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                    continue; // not a name this store writes
                };
                let key = if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                };
                let kind = entry.file_type().map_err(Error::io(entry.path()))?;
                if kind.is_dir() {
                    walk(&entry.path(), &key, visit)?;
                } else if kind.is_file() {
                    visit(&key);
                }
            }
            Ok(())
        }
        walk(&self.root, "", visit)
    }
}

/// An object as stored: its reference and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// `(tenant_id, object_type, object_id)`.
    pub object: ObjectRef,
    /// Bytes of its canonical CBOR.
    pub size: u64,
    /// Whether this call wrote it (false: it was there already, and its bytes were checked).
    pub written: bool,
}

/// The content-addressed store over a backend.
#[derive(Debug)]
pub struct ObjectStore {
    backend: Box<dyn ObjectBackend>,
}

impl ObjectStore {
    /// A store over `backend`.
    #[must_use]
    pub fn new(backend: Box<dyn ObjectBackend>) -> Self {
        Self { backend }
    }

    /// A store in a local directory.
    #[must_use]
    pub fn local(dir: impl Into<PathBuf>) -> Self {
        Self::new(Box::new(LocalDir::new(dir)))
    }

    /// The backend.
    #[must_use]
    pub fn backend(&self) -> &dyn ObjectBackend {
        self.backend.as_ref()
    }

    /// Stores `payload` as an object of `object_type` in `tenant_id`'s namespace. An object
    /// already stored under the same ID is never rewritten; its bytes are read and checked.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (tenant), [`Error::ObjectCorrupt`] (the stored copy does not
    /// hash to its ID), I/O.
    pub fn put(&self, tenant_id: &str, object_type: ObjectType, payload: &Value) -> Result<Stored> {
        // The same encoder and hash as `LineageObject::object_id`.
        let bytes = payload.to_canonical_bytes();
        let object = ObjectRef {
            tenant_id: tenant_id.to_owned(),
            object_type,
            object_id: sha256(&bytes),
        };
        let key = object_key(&object)?;
        let written = self.backend.put_if_absent(&key, &bytes)?;
        if !written {
            self.get_bytes(&object)?;
        }
        Ok(Stored {
            object,
            size: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
            written,
        })
    }

    /// The object's canonical CBOR bytes, after checking that they hash to its ID.
    ///
    /// # Errors
    /// [`Error::ObjectMissing`], [`Error::ObjectTooLarge`], [`Error::ObjectCorrupt`], I/O.
    pub fn get_bytes(&self, object: &ObjectRef) -> Result<Vec<u8>> {
        let key = object_key(object)?;
        let bytes = self
            .backend
            .get(&key, MAX_OBJECT_BYTES)?
            .ok_or_else(|| Error::ObjectMissing { key: key.clone() })?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_OBJECT_BYTES {
            return Err(Error::ObjectTooLarge {
                key,
                max: MAX_OBJECT_BYTES,
            });
        }
        let found = sha256(&bytes);
        if found != object.object_id {
            return Err(Error::ObjectCorrupt {
                key,
                expected: object.object_id,
                found,
            });
        }
        Ok(bytes)
    }

    /// The object's payload, checked (hash, then canonical CBOR).
    ///
    /// # Errors
    /// Those of [`get_bytes`](Self::get_bytes); [`lineage::Error::Cbor`] if the bytes are not
    /// canonical CBOR (they hash right, so they were stored so).
    pub fn get(&self, object: &ObjectRef) -> Result<Value> {
        Ok(cbor::decode(&self.get_bytes(object)?)?)
    }

    /// Removes an object (absent is fine).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (tenant), I/O.
    pub fn delete(&self, object: &ObjectRef) -> Result<()> {
        self.backend.delete(&object_key(object)?)
    }

    /// Every stored object, and the keys that are no object (leftovers of interrupted writes).
    ///
    /// # Errors
    /// I/O.
    pub fn list(&self) -> Result<(Vec<ObjectRef>, Vec<String>)> {
        let mut objects = Vec::new();
        let mut other = Vec::new();
        self.backend.list(&mut |key| match parse_key(key) {
            Some(o) => objects.push(o),
            None => other.push(key.to_owned()),
        })?;
        Ok((objects, other))
    }

    /// Calls `visit` with every key stored: the object it names, or `None` for a key that is no
    /// object (a leftover of an interrupted write). Memory does not grow with the store.
    ///
    /// # Errors
    /// I/O.
    pub fn visit(&self, visit: &mut dyn FnMut(Option<ObjectRef>, &str)) -> Result<()> {
        self.backend.list(&mut |key| visit(parse_key(key), key))
    }

    /// Removes a key that [`list`](Self::list) reported as no object.
    ///
    /// # Errors
    /// I/O.
    pub fn delete_key(&self, key: &str) -> Result<()> {
        self.backend.delete(key)
    }
}

/// Checks a tenant ID (non-empty, no NUL, short enough to be a directory name once encoded).
///
/// # Errors
/// [`Error::InvalidArgument`].
pub fn check_tenant(tenant_id: &str) -> Result<()> {
    let reason = if tenant_id.is_empty() {
        "must not be empty"
    } else if tenant_id.contains('\0') {
        "must not contain NUL"
    } else if encode_tenant(tenant_id).len() > MAX_TENANT_KEY_BYTES {
        "longer than 255 bytes once percent-encoded"
    } else {
        return Ok(());
    };
    Err(Error::InvalidArgument {
        what: "tenant_id",
        reason,
    })
}

fn encode_tenant(tenant_id: &str) -> String {
    let mut out = String::with_capacity(tenant_id.len());
    for b in tenant_id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push_str(&hex::encode_upper([b]));
        }
    }
    out
}

fn decode_tenant(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hi = bytes.next()?;
            let lo = bytes.next()?;
            let mut one = [0u8; 1];
            hex::decode_to_slice([hi, lo], &mut one).ok()?;
            out.push(one[0]);
        } else if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(b);
        } else {
            return None;
        }
    }
    let tenant = String::from_utf8(out).ok()?;
    // Only the one encoding this store writes is an object key.
    (encode_tenant(&tenant) == s).then_some(tenant)
}

/// The backend key of an object: `<tenant>/<object_type>/<id[0..2]>/<id>`.
///
/// # Errors
/// [`Error::InvalidArgument`] for a tenant [`check_tenant`] refuses.
pub fn object_key(object: &ObjectRef) -> Result<String> {
    check_tenant(&object.tenant_id)?;
    let id = object.object_id.to_hex();
    Ok(format!(
        "{}/{}/{}/{id}",
        encode_tenant(&object.tenant_id),
        object.object_type.as_str(),
        &id[..2]
    ))
}

/// The object a key names, if it is one [`object_key`] makes.
#[must_use]
pub fn parse_key(key: &str) -> Option<ObjectRef> {
    let mut parts = key.split('/');
    let (tenant, kind, fan, id) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || id.len() != 64 || !id.starts_with(fan) || fan.len() != 2 {
        return None;
    }
    if id.bytes().any(|b| !matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    Some(ObjectRef {
        tenant_id: decode_tenant(tenant)?,
        object_type: ObjectType::parse(kind).ok()?,
        object_id: Digest::from_hex(id).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_tenants_cannot_escape() -> Result<()> {
        for tenant in ["acme", "../etc", "a/b", ".", "ä ö", "%41"] {
            let o = ObjectRef {
                tenant_id: tenant.to_owned(),
                object_type: ObjectType::Split,
                object_id: sha256(tenant.as_bytes()),
            };
            let key = object_key(&o)?;
            assert_eq!(key.split('/').count(), 4, "{key}");
            assert!(
                key.split('/')
                    .all(|s| !s.is_empty() && s != "." && s != "..")
            );
            assert_eq!(parse_key(&key), Some(o));
        }
        assert!(parse_key("acme/split/ab/.abcd.123456.tmp").is_none());
        assert!(parse_key(&format!("%61/split/00/{}", "0".repeat(64))).is_none());
        assert!(check_tenant("").is_err());
        assert!(check_tenant("a\0").is_err());
        assert!(check_tenant(&"%".repeat(86)).is_err());
        Ok(())
    }

    #[test]
    fn an_object_is_stored_once_and_read_back_verified() -> Result<()> {
        let dir = tempfile::tempdir().map_err(Error::io("tempdir"))?;
        let store = ObjectStore::local(dir.path());
        let payload = Value::Array(vec![Value::text("x"), Value::Unsigned(7)]);
        let a = store.put("t", ObjectType::Artifact, &payload)?;
        assert!(a.written);
        assert_eq!(a.object.object_id, sha256(&payload.to_canonical_bytes()));
        let b = store.put("t", ObjectType::Artifact, &payload)?;
        assert!(!b.written);
        assert_eq!(store.get(&a.object)?, payload);
        // Another tenant's namespace is another object.
        let c = store.put("u", ObjectType::Artifact, &payload)?;
        assert!(c.written);
        Ok(())
    }

    #[test]
    fn a_corrupted_object_is_refused_on_read_and_never_rewritten() -> Result<()> {
        let dir = tempfile::tempdir().map_err(Error::io("tempdir"))?;
        let store = ObjectStore::local(dir.path());
        let s = store.put("t", ObjectType::Split, &Value::Unsigned(1))?;
        let path = dir.path().join(object_key(&s.object)?);
        fs::write(&path, [0x02]).map_err(Error::io(&path))?;
        assert!(matches!(
            store.get(&s.object),
            Err(Error::ObjectCorrupt { .. })
        ));
        // Putting the same payload again does not overwrite: it reports the corruption.
        assert!(matches!(
            store.put("t", ObjectType::Split, &Value::Unsigned(1)),
            Err(Error::ObjectCorrupt { .. })
        ));
        assert_eq!(fs::read(&path).map_err(Error::io(&path))?, [0x02]);
        Ok(())
    }

    #[test]
    fn missing_and_oversized_objects_are_typed_errors() -> Result<()> {
        let dir = tempfile::tempdir().map_err(Error::io("tempdir"))?;
        let store = ObjectStore::local(dir.path());
        let o = ObjectRef {
            tenant_id: "t".into(),
            object_type: ObjectType::Policy,
            object_id: Digest([7; 32]),
        };
        assert!(matches!(store.get(&o), Err(Error::ObjectMissing { .. })));
        let path = dir.path().join(object_key(&o)?);
        fs::create_dir_all(path.parent().unwrap_or(dir.path())).map_err(Error::io(&path))?;
        let big = File::create(&path).map_err(Error::io(&path))?;
        big.set_len(MAX_OBJECT_BYTES + 10)
            .map_err(Error::io(&path))?;
        assert!(matches!(store.get(&o), Err(Error::ObjectTooLarge { .. })));
        Ok(())
    }

    #[test]
    fn list_tells_objects_from_leftovers() -> Result<()> {
        let dir = tempfile::tempdir().map_err(Error::io("tempdir"))?;
        let store = ObjectStore::local(dir.path());
        let s = store.put("t", ObjectType::Split, &Value::Unsigned(1))?;
        let key = object_key(&s.object)?;
        let leftover = dir
            .path()
            .join("t/split")
            .join(&key[8..10])
            .join(".x.abcdef.tmp");
        fs::write(&leftover, b"partial").map_err(Error::io(&leftover))?;
        let (objects, other) = store.list()?;
        assert_eq!(objects, vec![s.object]);
        assert_eq!(other.len(), 1);
        store.delete_key(&other[0])?;
        assert!(!leftover.exists());
        Ok(())
    }
}
