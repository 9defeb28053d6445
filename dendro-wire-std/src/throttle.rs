//! Saying a recurring thing at most once a second: a flood of refused
//! connections or failed connects must not become a flood of log lines.

use std::time::{Duration, Instant};

/// Lets a recurring message through at most once per `every`, counting what
/// it held back.
#[derive(Debug)]
pub(crate) struct Throttle {
    every: Duration,
    last: Option<Instant>,
    held: u64,
}

impl Throttle {
    pub(crate) const fn new(every: Duration) -> Self {
        Throttle {
            every,
            last: None,
            held: 0,
        }
    }

    /// Another occurrence: `Some(n)` if it is to be said now, with `n`
    /// occurrences held back since the last time it was said.
    pub(crate) fn hit(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < self.every)
        {
            self.held += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_the_first_then_holds_back_and_counts() {
        let mut t = Throttle::new(Duration::from_secs(3600));
        assert_eq!(t.hit(), Some(0));
        assert_eq!(t.hit(), None);
        assert_eq!(t.hit(), None);
        t.last = Some(Instant::now() - Duration::from_secs(3601));
        assert_eq!(t.hit(), Some(2));
        assert_eq!(t.hit(), None);
    }
}
