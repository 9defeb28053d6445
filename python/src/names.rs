//! [`Names`]: a source's stream names, each numbered once, so that each
//! row's stream is a number in a column rather than a string per row.

use std::collections::HashMap;

/// A source's stream names, each numbered once, in the order first met.
///
/// Rows come from a few streams in a repeating order, so the name after the
/// last one found is tried first, then the others; a source of many streams
/// is looked up by hash. Within a frame, the core's row iterator hands out
/// a name met before as the same `str` it handed out then, so a name is
/// known by where it lies before its bytes are compared.
#[derive(Default)]
pub(crate) struct Names {
    names: Vec<Name>,
    by_name: HashMap<String, u32>,
    /// The number tried first.
    next: usize,
    /// The frame being numbered, counted from 1.
    frame: u64,
}

struct Name {
    name: String,
    /// Where its bytes lay when last met, and in which frame: a name at
    /// the same place in the same frame is the same bytes.
    at: usize,
    frame: u64,
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
    /// The names of another frame come next: where names lay in the last
    /// one says nothing about this one's.
    pub(crate) fn next_frame(&mut self) {
        self.frame += 1;
    }

    /// The number of `name`, a name of the frame being numbered, numbering
    /// it if it is new.
    #[inline(always)]
    pub(crate) fn number(&mut self, name: &str) -> u32 {
        let at = name.as_ptr() as usize;
        let found = match self.names.get(self.next) {
            Some(n) if n.at == at && n.frame == self.frame && n.name.len() == name.len() => {
                self.next
            }
            Some(n) if same(&n.name, name) => self.next,
            _ => self.look_up(name),
        };
        let n = &mut self.names[found];
        (n.at, n.frame) = (at, self.frame);
        self.next = if found + 1 == self.names.len() {
            0
        } else {
            found + 1
        };
        found as u32
    }

    /// The number of `name` by its bytes, numbering it if it is new.
    #[inline(never)]
    fn look_up(&mut self, name: &str) -> usize {
        let found = match self.names.len() {
            len if len <= SCANNED => self.names.iter().position(|n| same(&n.name, name)),
            _ => self.by_name.get(name).map(|&n| n as usize),
        };
        found.unwrap_or_else(|| {
            self.names.push(Name {
                name: name.to_owned(),
                at: 0,
                frame: 0,
            });
            self.by_name
                .insert(name.to_owned(), self.names.len() as u32 - 1);
            self.names.len() - 1
        })
    }

    /// The names, by number.
    pub(crate) fn into_names(self) -> Vec<String> {
        self.names.into_iter().map(|n| n.name).collect()
    }
}
