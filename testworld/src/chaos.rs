//! Seeded random faults for the fault proxy: the chaos soak's "20 % of requests get one of these".
//!
//! A [`Chaos`] decides, for each request no rule matched, whether it gets a fault (with probability
//! `rate`) and which one of its mix, with parameters drawn at random below each template's value
//! (a flipped byte's offset, where a body is cut or reset). The generator is a seeded xorshift, so
//! a seed names one sequence of decisions; which request receives which decision still depends on
//! the order requests arrive in. Range faults only ever go to requests that carry `Range`.

use std::time::Duration;

use crate::faults::Fault;

/// Random faults at a rate, from a mix.
#[derive(Debug, Clone)]
pub struct Chaos {
    state: u64,
    /// Per million requests.
    rate: u64,
    mix: Vec<Fault>,
}

impl Chaos {
    /// Faults for `rate` (0.0–1.0) of the requests, drawn from `mix`, seeded by `seed`.
    pub fn new(seed: u64, rate: f64, mix: Vec<Fault>) -> Self {
        assert!(!mix.is_empty(), "a chaos mix needs at least one fault");
        Self {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            rate: (rate.clamp(0.0, 1.0) * 1_000_000.0) as u64,
            mix,
        }
    }

    /// Everything a network does to a client, once: server errors, 429 with `Retry-After`, resets
    /// before and during a body, truncation, an empty 200 that promised a length, a flipped byte, a
    /// stall longer than `idle_timeout`, Range ignored, answered with another range or refused,
    /// and a slow trickle.
    pub fn network_mix(idle_timeout: Duration) -> Vec<Fault> {
        vec![
            Fault::Status(500),
            Fault::Status(502),
            Fault::Status(503),
            Fault::TooManyRequests { retry_after: 1 },
            Fault::ResetAfter { after: 0 },
            Fault::ResetAfter { after: 4096 },
            Fault::Truncate { after: 4096 },
            Fault::Truncate { after: 0 },
            Fault::FlipByte { offset: 96 },
            Fault::Stall {
                after: 512,
                pause: idle_timeout + Duration::from_secs(1),
            },
            Fault::IgnoreRange,
            Fault::WrongContentRange,
            Fault::RangeRejected,
            Fault::Trickle {
                chunk: 16 * 1024,
                pause: Duration::from_millis(5),
            },
        ]
    }

    fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The fault for the next request, if it gets one.
    pub(crate) fn pick(&mut self, has_range: bool) -> Option<Fault> {
        if self.next() % 1_000_000 >= self.rate {
            return None;
        }
        let ranged = |f: &Fault| {
            matches!(
                f,
                Fault::IgnoreRange | Fault::WrongContentRange | Fault::RangeRejected
            )
        };
        let candidates: Vec<Fault> = self
            .mix
            .iter()
            .filter(|f| has_range || !ranged(f))
            .cloned()
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let index = (self.next() % candidates.len() as u64) as usize;
        let below = |max: usize, r: u64| (r % (max as u64 + 1)) as usize;
        let r = self.next();
        Some(match candidates[index].clone() {
            Fault::FlipByte { offset } => Fault::FlipByte {
                offset: below(offset, r),
            },
            Fault::Truncate { after } => Fault::Truncate {
                after: below(after, r),
            },
            Fault::ResetAfter { after } => Fault::ResetAfter {
                after: below(after, r),
            },
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_holds_and_a_seed_repeats_its_decisions() {
        let mix = Chaos::network_mix(Duration::from_secs(1));
        let mut a = Chaos::new(7, 0.2, mix.clone());
        let mut b = Chaos::new(7, 0.2, mix);
        let picks: Vec<_> = (0..10_000)
            .map(|_| a.pick(true).map(|f| f.name()))
            .collect();
        let again: Vec<_> = (0..10_000)
            .map(|_| b.pick(true).map(|f| f.name()))
            .collect();
        assert_eq!(picks, again);
        let faults = picks.iter().filter(|p| p.is_some()).count();
        assert!((1_700..2_300).contains(&faults), "{faults} of 10000");
    }

    #[test]
    fn range_faults_go_only_to_range_requests() {
        let mut chaos = Chaos::new(1, 1.0, vec![Fault::RangeRejected, Fault::Status(500)]);
        for _ in 0..1000 {
            assert!(!matches!(chaos.pick(false), Some(Fault::RangeRejected)));
        }
    }
}
