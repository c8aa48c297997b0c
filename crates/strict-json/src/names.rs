//! O(1) lookups of unique names held in a `Vec`, without copying the names.
//!
//! Objects keep their order (pyfolds' index is insertion-ordered, and so is the reader's list of
//! entries), so they stay `Vec`s; a [`NameTable`] beside one maps a name to its position. The
//! reader's duplicate-key check goes through one, and so do fold's chunk-name checks and lookups,
//! so an input with `n` keys or names costs O(n) to check instead of O(n²) (issue 14 §2: 80 000
//! keys took 28 s with a linear scan per key).

use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;

/// Positions of names in a sequence the caller owns, found by hashing.
///
/// The table stores positions only; `name_at` gives the name at a position, so the names are
/// never copied. The hasher is randomly keyed (SipHash, `RandomState`), so an input cannot be
/// crafted to make its names collide.
#[derive(Debug, Default, Clone)]
pub struct NameTable {
    hasher: RandomState,
    table: HashTable<usize>,
}

impl NameTable {
    /// A table with room for `n` names.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        Self {
            hasher: RandomState::new(),
            table: HashTable::with_capacity(n),
        }
    }

    /// The position of `name`, where `name_at` gives the name at a position.
    pub fn find<'a>(&self, name: &str, name_at: impl Fn(usize) -> &'a str) -> Option<usize> {
        self.table
            .find(self.hasher.hash_one(name), |&i| name_at(i) == name)
            .copied()
    }

    /// Records that `name` is at `position`, unless the name is already present.
    ///
    /// # Errors
    /// The position `name` already has.
    pub fn insert<'a>(
        &mut self,
        name: &str,
        position: usize,
        name_at: impl Fn(usize) -> &'a str,
    ) -> Result<(), usize> {
        let hash = self.hasher.hash_one(name);
        if let Some(&existing) = self.table.find(hash, |&i| name_at(i) == name) {
            return Err(existing);
        }
        let hasher = &self.hasher;
        self.table
            .insert_unique(hash, position, |&i| hasher.hash_one(name_at(i)));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_name_and_refuses_repeats() {
        let names: Vec<String> = (0..1000).map(|i| format!("n{i}")).collect();
        let mut table = NameTable::with_capacity(0);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(table.insert(name, i, |p| &names[p]), Ok(()));
        }
        for (i, name) in names.iter().enumerate() {
            assert_eq!(table.find(name, |p| &names[p]), Some(i));
        }
        assert_eq!(table.insert("n7", 1000, |p| &names[p]), Err(7));
        assert_eq!(table.find("absent", |p| &names[p]), None);
    }
}
