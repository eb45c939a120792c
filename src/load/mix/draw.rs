//! The draw's generator (splitmix64): a seed, a lane and a stream give
//! the same numbers in every version.
//!
//! It never knows a mix; `mod.rs` draws endpoints with it and
//! `render.rs` placeholders.

/// A small, fast generator (splitmix64), written out here so a seed draws
/// the same requests in every future version.
#[derive(Debug, Clone)]
pub struct Draw {
    state: u64,
}

impl Draw {
    /// Stream `stream` of lane `lane` under `seed`: lanes (threads, and
    /// segments' threads) draw apart, and so do a lane's streams.
    pub fn new(seed: u64, lane: u64, stream: u64) -> Draw {
        let mut d = Draw {
            state: seed
                ^ lane.wrapping_mul(0xA24B_AED4_963E_E407)
                ^ stream.wrapping_mul(0x9FB2_1C65_1E98_DF25),
        };
        // Stir once, so neighbouring seeds start far apart.
        d.next_u64();
        d
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in 0..n (n > 0), by multiplication (Lemire's method,
    /// without the rejection step: the bias is below n / 2^64).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}
