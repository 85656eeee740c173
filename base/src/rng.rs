//! A small deterministic pseudo-random generator (xorshift64) for generated corpora, benchmarks
//! and tests: the same seed gives the same sequence on every machine, with no dependency.

/// A small deterministic PRNG (xorshift64), so generated corpora and mutation tests repeat.
pub struct Rng(pub u64);
impl Rng {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next_u64() % from.len() as u64) as usize]
    }
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}
