//! [`Names`]: a source's stream names, each numbered once, so that each
//! row's stream is a number in a column rather than a string per row.

use std::collections::HashMap;

/// A source's stream names, each numbered once, in the order first met.
/// Rows come from a few streams in a repeating order, so the name after
/// the last one found is tried first, then the others; a source of many
/// streams is looked up by hash.
#[derive(Default)]
pub(crate) struct Names {
    names: Vec<String>,
    by_name: HashMap<String, u32>,
    next: usize,
}

/// Equality of two stream names without a call into `memcmp`, which costs
/// more than the comparison for a name of a few bytes: up to 16 bytes as
/// the first and last 8 (the core's row iterator does the same).
#[inline(always)]
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len()
        && match a.len() {
            8..=16 => {
                a.first_chunk::<8>() == b.first_chunk::<8>()
                    && a.last_chunk::<8>() == b.last_chunk::<8>()
            }
            _ => a == b,
        }
}

/// Past this many names a lookup hashes rather than scans.
const SCANNED: usize = 16;

impl Names {
    /// The number of `name`, numbering it if it is new.
    #[inline]
    pub(crate) fn number(&mut self, name: &str) -> u32 {
        if self.names.get(self.next).is_some_and(|n| same(n, name)) {
            let found = self.next;
            self.next = (found + 1) % self.names.len();
            return found as u32;
        }
        let found = match self.names.len() {
            len if len <= SCANNED => self.names.iter().position(|n| same(n, name)),
            _ => self.by_name.get(name).map(|&n| n as usize),
        };
        let found = found.unwrap_or_else(|| {
            self.names.push(name.to_owned());
            self.by_name
                .insert(name.to_owned(), self.names.len() as u32 - 1);
            self.names.len() - 1
        });
        self.next = (found + 1) % self.names.len();
        found as u32
    }

    /// The names, by number.
    pub(crate) fn into_names(self) -> Vec<String> {
        self.names
    }
}
