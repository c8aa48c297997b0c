//! Lineage objects, `lineage_object_hash`, `lineage_root_hash` and the namespace rules
//! (004 §II.F cross-tenant rule, §II.G, §0.K missing refs).

use std::collections::BTreeSet;

use crate::cbor::Value;
use crate::error::Error;
use crate::hash::{Digest, merkle_root, sha256, sha256_cbor};

/// Tag of the `lineage_object_hash` preimage.
pub const LINEAGE_OBJECT_TAG: &str = "lineage_object_v1";
/// Leaf tag of the lineage tree.
pub const LINEAGE_LEAF_TAG: &str = "lineage_leaf_v1";
/// Parent tag of the lineage tree.
pub const LINEAGE_NODE_TAG: &str = "lineage_node_v1";

/// The contract's `object_type` domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ObjectType {
    /// `"dataset"`
    Dataset,
    /// `"transform"`
    Transform,
    /// `"split"`
    Split,
    /// `"artifact"`
    Artifact,
    /// `"policy"`
    Policy,
    /// `"checkpoint"`
    Checkpoint,
}

impl ObjectType {
    /// Every object type.
    pub const ALL: [Self; 6] = [
        Self::Dataset,
        Self::Transform,
        Self::Split,
        Self::Artifact,
        Self::Policy,
        Self::Checkpoint,
    ];

    /// The contract's string.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Dataset => "dataset",
            Self::Transform => "transform",
            Self::Split => "split",
            Self::Artifact => "artifact",
            Self::Policy => "policy",
            Self::Checkpoint => "checkpoint",
        }
    }

    /// Parses the contract's string.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] outside the domain.
    pub fn parse(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or(Error::InvalidArgument {
                what: "object_type",
                reason: "not in {dataset, transform, split, artifact, policy, checkpoint}",
                source: None,
            })
    }
}

/// A reference from one lineage object to another, in a tenant's namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// The namespace of the referenced object.
    pub tenant_id: String,
    /// Its type.
    pub object_type: ObjectType,
    /// Its ID.
    pub object_id: Digest,
}

/// A lineage object: committed `payload` (a CBOR item) in a tenant's namespace.
/// `object_id = SHA-256(CBOR_CANONICAL(payload))`: content-addressed.
#[derive(Debug, Clone, PartialEq)]
pub struct LineageObject {
    /// Namespace.
    pub tenant_id: String,
    /// Type.
    pub object_type: ObjectType,
    /// The committed content.
    pub payload: Value,
    /// Objects this one depends on (not part of the hash; checked by [`lineage_root_hash`]).
    pub refs: Vec<ObjectRef>,
}

impl LineageObject {
    /// `object_id = SHA-256(CBOR_CANONICAL(payload))`.
    #[must_use]
    pub fn object_id(&self) -> Digest {
        sha256(&self.payload.to_canonical_bytes())
    }

    /// A reference to this object.
    #[must_use]
    pub fn as_ref_to(&self) -> ObjectRef {
        ObjectRef {
            tenant_id: self.tenant_id.clone(),
            object_type: self.object_type,
            object_id: self.object_id(),
        }
    }

    /// `lineage_object_hash = SHA-256(CBOR_CANONICAL(["lineage_object_v1", object_type, object_id, payload]))`,
    /// with `payload` embedded as the CBOR item itself (its canonical bytes appear verbatim).
    #[must_use]
    pub fn lineage_object_hash(&self) -> Digest {
        lineage_object_hash(self.object_type, self.object_id(), &self.payload)
    }
}

/// See [`LineageObject::lineage_object_hash`].
#[must_use]
pub fn lineage_object_hash(object_type: ObjectType, object_id: Digest, payload: &Value) -> Digest {
    sha256_cbor(&Value::Array(vec![
        Value::text(LINEAGE_OBJECT_TAG),
        Value::text(object_type.as_str()),
        object_id.to_cbor(),
        payload.clone(),
    ]))
}

/// `leaf_i = SHA-256(CBOR_CANONICAL(["lineage_leaf_v1", object_type_i, object_id_i, lineage_object_hash_i]))`.
#[must_use]
pub fn lineage_leaf_hash(
    object_type: ObjectType,
    object_id: Digest,
    object_hash: Digest,
) -> Digest {
    sha256_cbor(&Value::Array(vec![
        Value::text(LINEAGE_LEAF_TAG),
        Value::text(object_type.as_str()),
        object_id.to_cbor(),
        object_hash.to_cbor(),
    ]))
}

/// Validates the namespace rules for `tenant_id`'s objects and returns `lineage_root_hash`.
///
/// Checks, first failure wins: at least one object; every object and every reference is in
/// `tenant_id`'s namespace (cross-tenant: hard fail); no two objects share
/// `(object_type, object_id)`; every reference resolves. Leaves are sorted by
/// `(object_type string bytes, object_id bytes)`.
///
/// # Errors
/// [`Error::InvalidLineageSet`], [`Error::CrossTenantReference`],
/// [`Error::MissingLineageRef`].
pub fn lineage_root_hash(tenant_id: &str, objects: &[LineageObject]) -> Result<Digest, Error> {
    if objects.is_empty() {
        return Err(Error::InvalidLineageSet {
            reason: "no lineage objects",
        });
    }
    let mut keys = BTreeSet::new();
    let mut leaves = Vec::with_capacity(objects.len());
    for o in objects {
        let id = o.object_id();
        if o.tenant_id != tenant_id {
            return Err(Error::CrossTenantReference {
                expected: tenant_id.to_owned(),
                found: o.tenant_id.clone(),
                object_id: id,
            });
        }
        if let Some(r) = o.refs.iter().find(|r| r.tenant_id != tenant_id) {
            return Err(Error::CrossTenantReference {
                expected: tenant_id.to_owned(),
                found: r.tenant_id.clone(),
                object_id: r.object_id,
            });
        }
        if !keys.insert((o.object_type.as_str(), id)) {
            return Err(Error::InvalidLineageSet {
                reason: "two objects share (object_type, object_id)",
            });
        }
        leaves.push((
            o.object_type.as_str(),
            id,
            o.lineage_object_hash(),
            o.object_type,
        ));
    }
    for o in objects {
        if let Some(r) = o
            .refs
            .iter()
            .find(|r| !keys.contains(&(r.object_type.as_str(), r.object_id)))
        {
            return Err(Error::MissingLineageRef {
                object_type: r.object_type.as_str(),
                object_id: r.object_id,
            });
        }
    }
    leaves.sort_by(|a, b| (a.0.as_bytes(), a.1).cmp(&(b.0.as_bytes(), b.1)));
    let leaf_hashes: Vec<Digest> = leaves
        .iter()
        .map(|(_, id, h, t)| lineage_leaf_hash(*t, *id, *h))
        .collect();
    merkle_root(LINEAGE_NODE_TAG, &leaf_hashes).ok_or(Error::InvalidLineageSet {
        reason: "no lineage objects",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(tenant: &str, t: ObjectType, n: u64) -> LineageObject {
        LineageObject {
            tenant_id: tenant.to_owned(),
            object_type: t,
            payload: Value::Unsigned(n),
            refs: vec![],
        }
    }

    #[test]
    fn object_and_leaf_hashes_follow_their_preimages_byte_for_byte() {
        let o = obj("t", ObjectType::Artifact, 1);
        let id = sha256(&[0x01]);
        assert_eq!(o.object_id(), id);
        let mut pre = vec![0x84, 0x71];
        pre.extend_from_slice(b"lineage_object_v1");
        pre.push(0x68);
        pre.extend_from_slice(b"artifact");
        pre.extend_from_slice(&[0x58, 0x20]);
        pre.extend_from_slice(&id.0);
        pre.push(0x01); // the payload item itself, not a byte string around it
        let oh = sha256(&pre);
        assert_eq!(o.lineage_object_hash(), oh);
        let mut leaf = vec![0x84, 0x6f];
        leaf.extend_from_slice(b"lineage_leaf_v1");
        leaf.push(0x68);
        leaf.extend_from_slice(b"artifact");
        for h in [id, oh] {
            leaf.extend_from_slice(&[0x58, 0x20]);
            leaf.extend_from_slice(&h.0);
        }
        assert_eq!(
            lineage_leaf_hash(ObjectType::Artifact, id, oh),
            sha256(&leaf)
        );
        assert_eq!(lineage_root_hash("t", &[o]).ok(), Some(sha256(&leaf)));
    }

    #[test]
    fn root_does_not_depend_on_object_order() -> Result<(), Error> {
        let a = [
            obj("t", ObjectType::Split, 1),
            obj("t", ObjectType::Dataset, 2),
            obj("t", ObjectType::Transform, 3),
        ];
        let mut b = a.clone();
        b.reverse();
        assert_eq!(lineage_root_hash("t", &a)?, lineage_root_hash("t", &b)?);
        Ok(())
    }

    #[test]
    fn cross_tenant_objects_and_references_hard_fail() {
        let other = obj("u", ObjectType::Split, 1);
        assert!(matches!(
            lineage_root_hash("t", std::slice::from_ref(&other)),
            Err(Error::CrossTenantReference { .. })
        ));
        let mut mine = obj("t", ObjectType::Dataset, 2);
        mine.refs.push(other.as_ref_to());
        assert!(matches!(
            lineage_root_hash("t", &[mine]),
            Err(Error::CrossTenantReference { .. })
        ));
    }

    #[test]
    fn missing_and_duplicate_objects_fail() {
        let s = obj("t", ObjectType::Split, 1);
        let mut d = obj("t", ObjectType::Dataset, 2);
        d.refs.push(s.as_ref_to());
        assert!(matches!(
            lineage_root_hash("t", &[d.clone()]),
            Err(Error::MissingLineageRef { .. })
        ));
        assert!(lineage_root_hash("t", &[d, s.clone()]).is_ok());
        assert!(matches!(
            lineage_root_hash("t", &[s.clone(), s]),
            Err(Error::InvalidLineageSet { .. })
        ));
        assert!(matches!(
            lineage_root_hash("t", &[]),
            Err(Error::InvalidLineageSet { .. })
        ));
    }
}
