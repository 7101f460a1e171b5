//! Small collections for the per-packet path, which allocates nothing once
//! its buffers have grown (DESIGN: "the simulator's per-packet path
//! allocates nothing").

/// A map from ids that mostly grow (frame numbers) to records, as a vector
/// sorted by id: what a controller keeps per frame in flight, a few dozen
/// entries. A `BTreeMap` allocates a node every few inserts as its ids
/// move right and frees old ones as they leave; this map reuses its
/// vector, and keeps removed records (with the buffers they own) for the
/// next insert ([`IdMap::entry_or_insert_with`]).
///
/// Iteration, [`retain`](IdMap::retain) and [`pop_first`](IdMap::pop_first)
/// go in increasing id order, as a `BTreeMap`'s would. Inserting an id
/// larger than every other (the common case) costs nothing more than a
/// push; removing the oldest shifts the vector (cheap at this size).
#[derive(Debug, Clone)]
pub struct IdMap<V> {
    entries: Vec<(u64, V)>,
    spare: Vec<V>,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            entries: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl<V> IdMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Where `id` is, or where it would go.
    fn position(&self, id: u64) -> Result<usize, usize> {
        match self.entries.last() {
            None => Err(0),
            Some(&(last, _)) if id > last => Err(self.entries.len()),
            _ => self.entries.binary_search_by_key(&id, |e| e.0),
        }
    }

    /// The record of `id`.
    pub fn get(&self, id: u64) -> Option<&V> {
        self.position(id).ok().map(|i| &self.entries[i].1)
    }

    /// The record of `id`, mutably.
    pub fn get_mut(&mut self, id: u64) -> Option<&mut V> {
        self.position(id).ok().map(|i| &mut self.entries[i].1)
    }

    /// The record of `id`, inserted first if absent: `make` builds it, given
    /// a record removed earlier (if one is kept) whose buffers it may reuse.
    pub fn entry_or_insert_with(&mut self, id: u64, make: impl FnOnce(Option<V>) -> V) -> &mut V {
        let i = match self.position(id) {
            Ok(i) => i,
            Err(i) => {
                let v = make(self.spare.pop());
                self.entries.insert(i, (id, v));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Removes and returns the record of `id` (hand it back with
    /// [`recycle`](Self::recycle) to reuse its buffers).
    pub fn remove(&mut self, id: u64) -> Option<V> {
        self.position(id).ok().map(|i| self.entries.remove(i).1)
    }

    /// Removes and returns the entry with the smallest id.
    pub fn pop_first(&mut self) -> Option<(u64, V)> {
        (!self.entries.is_empty()).then(|| self.entries.remove(0))
    }

    /// Keeps a removed record for a later insert.
    pub fn recycle(&mut self, v: V) {
        self.spare.push(v);
    }

    /// The entries in increasing id order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> {
        self.entries.iter().map(|(id, v)| (*id, v))
    }

    /// Keeps the entries for which `keep` is true, visiting them in
    /// increasing id order; the others are kept for reuse.
    pub fn retain(&mut self, mut keep: impl FnMut(u64, &mut V) -> bool) {
        let mut i = 0;
        while i < self.entries.len() {
            let (id, v) = &mut self.entries[i];
            if keep(*id, v) {
                i += 1;
            } else {
                let (_, v) = self.entries.remove(i);
                self.spare.push(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::rng;
    use rand::Rng as _;

    #[test]
    fn it_behaves_as_a_btreemap_under_random_operations() {
        let mut r = rng::stream(5, 0);
        let mut ours: IdMap<u32> = IdMap::new();
        let mut theirs: BTreeMap<u64, u32> = BTreeMap::new();
        let mut next = 0u64;
        for step in 0..20_000u32 {
            match r.random_range(0..10) {
                // Mostly new ids at the right, sometimes an old one.
                0..=4 => {
                    let id = if r.random_bool(0.8) {
                        next += r.random_range(1..3);
                        next
                    } else {
                        r.random_range(0..=next)
                    };
                    *ours.entry_or_insert_with(id, |_| 0) += step;
                    *theirs.entry(id).or_insert(0) += step;
                }
                5 => {
                    let id = r.random_range(0..=next);
                    assert_eq!(ours.remove(id), theirs.remove(&id));
                }
                6 => assert_eq!(ours.pop_first(), theirs.pop_first()),
                7 => {
                    let m = r.random_range(2..5);
                    ours.retain(|id, v| (id + u64::from(*v)) % m != 0);
                    theirs.retain(|id, v| (id + u64::from(*v)) % m != 0);
                }
                _ => {
                    let id = r.random_range(0..=next);
                    assert_eq!(ours.get(id), theirs.get(&id));
                    if let (Some(a), Some(b)) = (ours.get_mut(id), theirs.get_mut(&id)) {
                        *a += 1;
                        *b += 1;
                    }
                }
            }
            assert_eq!(ours.len(), theirs.len());
        }
        let a: Vec<(u64, u32)> = ours.iter().map(|(k, v)| (k, *v)).collect();
        let b: Vec<(u64, u32)> = theirs.into_iter().collect();
        assert_eq!(a, b);
    }

    #[test]
    fn removed_records_are_offered_back_with_their_buffers() {
        let mut m: IdMap<Vec<u8>> = IdMap::new();
        m.entry_or_insert_with(1, |_| Vec::with_capacity(100))
            .push(7);
        m.retain(|_, _| false);
        let got = m.entry_or_insert_with(2, |spare| {
            let mut v = spare.expect("the removed record");
            v.clear();
            v
        });
        assert!(got.is_empty() && got.capacity() >= 100);
        let old = m.remove(2).unwrap();
        m.recycle(old);
        m.entry_or_insert_with(3, |spare| {
            assert!(spare.is_some_and(|v| v.capacity() >= 100));
            Vec::new()
        });
    }
}
