//! CAS retention metadata and the GC planner (004 §II.F "CAS retention metadata", "GC
//! invariant").
//!
//! The planner's one hard rule: nothing reachable from a pinned root (or from an object whose
//! class is `golden` / `certified_release`) is ever marked collectible. Beyond it, nothing that a
//! kept object references is collected either, so a collection never leaves a dangling
//! reference (`docs/lineage.md` §9).

use std::collections::{BTreeMap, BTreeSet};

use crate::error::Error;
use crate::hash::Digest;
use crate::object::ObjectType;

/// `retention_class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum RetentionClass {
    /// Kept forever.
    Golden,
    /// Kept forever.
    CertifiedRelease,
    /// The default: collectible once unreachable and past `gc_eligible_after_utc`.
    #[default]
    Experimental,
    /// Collectible once unreachable and past `gc_eligible_after_utc` (immediately if unset).
    Ephemeral,
}

impl RetentionClass {
    /// Every class, most durable first.
    pub const ALL: [Self; 4] = [
        Self::Golden,
        Self::CertifiedRelease,
        Self::Experimental,
        Self::Ephemeral,
    ];

    /// The contract's string.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Golden => "golden",
            Self::CertifiedRelease => "certified_release",
            Self::Experimental => "experimental",
            Self::Ephemeral => "ephemeral",
        }
    }

    /// Parses the contract's string.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] outside the domain.
    pub fn parse(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or(Error::InvalidArgument {
                what: "retention_class",
                reason: "not in {golden, certified_release, experimental, ephemeral}",
                source: None,
            })
    }

    /// `golden` and `certified_release`: never collected, and roots of the GC.
    #[must_use]
    pub const fn is_permanent(self) -> bool {
        matches!(self, Self::Golden | Self::CertifiedRelease)
    }
}

/// An object's key in the store.
pub type ObjectKey = (ObjectType, Digest);

/// Retention metadata of one stored object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RetentionMeta {
    /// `retention_class` (default `experimental`).
    pub retention_class: RetentionClass,
    /// `pin_root_refs`: certificate / model-release roots that pin this object's closure.
    pub pin_root_refs: Vec<ObjectKey>,
    /// `gc_eligible_after_utc`, Unix seconds; `None`: never for `experimental`, at once for
    /// `ephemeral`.
    pub gc_eligible_after_utc: Option<u64>,
}

impl RetentionMeta {
    /// Whether this metadata alone lets its object go at `now_utc` (reachability aside): never
    /// for a permanent class; at `gc_eligible_after_utc` and after when it is set; without a
    /// time, at once for `ephemeral` and never for `experimental`.
    ///
    /// A catalog calls a published snapshot *expired* when its metadata is collectible.
    #[must_use]
    pub const fn collectible_at(&self, now_utc: u64) -> bool {
        match (self.retention_class, self.gc_eligible_after_utc) {
            (RetentionClass::Golden | RetentionClass::CertifiedRelease, _)
            | (RetentionClass::Experimental, None) => false,
            (RetentionClass::Ephemeral, None) => true,
            (_, Some(t)) => now_utc >= t,
        }
    }
}

/// One object as the GC sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredObject {
    /// Retention metadata.
    pub meta: RetentionMeta,
    /// Objects it references (its lineage edges).
    pub refs: Vec<ObjectKey>,
}

/// Which objects may be collected at `now_utc`, given the store and the active roots
/// (certificates / releases). Returns the collectible keys in sorted order.
///
/// Roots are: `active_roots`, every `pin_root_refs` entry of every object, and every object its
/// own metadata keeps ([`RetentionMeta::collectible_at`] false: a permanent class, a time not yet
/// reached, `experimental` without a time). Everything reachable from a root through `refs` is
/// kept, whatever its class or time; a missing reference target is ignored (nothing to collect).
/// The rest is collectible: each such object is unreachable from every active and pinned root,
/// its own metadata lets it go, and no kept object references it (so collecting never leaves a
/// dangling reference).
///
/// # Examples
/// ```
/// use lineage::retention::{RetentionMeta, StoredObject, plan_gc};
/// use lineage::{Digest, object::ObjectType};
/// let k = |b| (ObjectType::Artifact, Digest([b; 32]));
/// let meta = RetentionMeta { gc_eligible_after_utc: Some(0), ..Default::default() };
/// let store = [(k(1), StoredObject { meta: meta.clone(), refs: vec![k(2)] }),
///              (k(2), StoredObject { meta: meta.clone(), refs: vec![] }),
///              (k(3), StoredObject { meta, refs: vec![] })].into_iter().collect();
/// assert_eq!(plan_gc(&store, &[k(1)], 10), vec![k(3)]);
/// ```
#[must_use]
pub fn plan_gc(
    store: &BTreeMap<ObjectKey, StoredObject>,
    active_roots: &[ObjectKey],
    now_utc: u64,
) -> Vec<ObjectKey> {
    let mut stack: Vec<ObjectKey> = active_roots.to_vec();
    for (k, o) in store {
        stack.extend(o.meta.pin_root_refs.iter().copied());
        if !o.meta.collectible_at(now_utc) {
            stack.push(*k);
        }
    }
    let mut reachable = BTreeSet::new();
    while let Some(k) = stack.pop() {
        if !reachable.insert(k) {
            continue;
        }
        if let Some(o) = store.get(&k) {
            stack.extend(o.refs.iter().copied().filter(|r| !reachable.contains(r)));
        }
    }
    store
        .keys()
        .filter(|k| !reachable.contains(*k))
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(b: u8) -> ObjectKey {
        (ObjectType::Artifact, Digest([b; 32]))
    }

    fn obj(class: RetentionClass, after: Option<u64>, refs: Vec<ObjectKey>) -> StoredObject {
        StoredObject {
            meta: RetentionMeta {
                retention_class: class,
                pin_root_refs: vec![],
                gc_eligible_after_utc: after,
            },
            refs,
        }
    }

    #[test]
    fn default_class_is_experimental() {
        assert_eq!(
            RetentionMeta::default().retention_class,
            RetentionClass::Experimental
        );
    }

    #[test]
    fn closure_of_a_pinned_root_is_never_collected() {
        let mut store = BTreeMap::new();
        store.insert(k(1), obj(RetentionClass::Ephemeral, Some(0), vec![k(2)]));
        store.insert(k(2), obj(RetentionClass::Ephemeral, Some(0), vec![k(3)]));
        store.insert(k(3), obj(RetentionClass::Ephemeral, Some(0), vec![]));
        let mut pinner = obj(RetentionClass::Ephemeral, Some(0), vec![]);
        pinner.meta.pin_root_refs.push(k(2));
        store.insert(k(4), pinner);
        // k(2) is pinned (and so k(3)); k(1) and the pinner itself are not.
        assert_eq!(plan_gc(&store, &[], 100), vec![k(1), k(4)]);
    }

    #[test]
    fn golden_objects_keep_their_closure_and_eligibility_time_is_respected() {
        let mut store = BTreeMap::new();
        store.insert(k(1), obj(RetentionClass::Golden, None, vec![k(2)]));
        store.insert(k(2), obj(RetentionClass::Ephemeral, None, vec![]));
        store.insert(k(3), obj(RetentionClass::Experimental, Some(50), vec![]));
        store.insert(k(4), obj(RetentionClass::Experimental, None, vec![]));
        assert_eq!(plan_gc(&store, &[], 49), Vec::<ObjectKey>::new());
        assert_eq!(plan_gc(&store, &[], 50), vec![k(3)]);
    }

    #[test]
    fn what_a_kept_object_references_is_kept_even_when_eligible() {
        // k(1) is an experimental object without a time (kept by its own metadata); it
        // references k(2), eligible since 0 and reachable from no root: collecting k(2) would
        // leave k(1) pointing at nothing.
        let mut store = BTreeMap::new();
        store.insert(k(1), obj(RetentionClass::Experimental, None, vec![k(2)]));
        store.insert(k(2), obj(RetentionClass::Ephemeral, Some(0), vec![k(3)]));
        store.insert(k(3), obj(RetentionClass::Ephemeral, Some(0), vec![]));
        store.insert(k(4), obj(RetentionClass::Ephemeral, Some(0), vec![k(3)]));
        assert_eq!(plan_gc(&store, &[], 10), vec![k(4)]);
    }

    #[test]
    fn collectible_at_follows_class_and_time() {
        let m = |class, after| RetentionMeta {
            retention_class: class,
            pin_root_refs: vec![],
            gc_eligible_after_utc: after,
        };
        assert!(!m(RetentionClass::Golden, Some(0)).collectible_at(u64::MAX));
        assert!(!m(RetentionClass::CertifiedRelease, None).collectible_at(u64::MAX));
        assert!(!m(RetentionClass::Experimental, None).collectible_at(u64::MAX));
        assert!(m(RetentionClass::Ephemeral, None).collectible_at(0));
        assert!(!m(RetentionClass::Experimental, Some(5)).collectible_at(4));
        assert!(m(RetentionClass::Experimental, Some(5)).collectible_at(5));
    }
}
