//! The one deterministic "RNG" of the test code: it returns the bytes `start, start + 1, ...`
//! (wrapping). The known-answer vectors are made with it, so an independent implementation can
//! redo every draw (each crate's tests/data/README.md), and the wasm round trip uses it so that
//! neither side needs a source of randomness. It claims `CryptoRng` only because the encryption
//! API requires one: it is predictable by design and only ever used by tests and test harnesses
//! (the wasm harness, which cannot take test-support as a dependency on wasm32, includes this
//! file by path).

/// Yields `self.0`, `self.0 + 1`, ... (wrapping).
#[derive(Debug, Clone)]
pub struct CountingRng(pub u8);

impl rand_core::RngCore for CountingRng {
    fn next_u32(&mut self) -> u32 {
        rand_core::impls::next_u32_via_fill(self)
    }
    fn next_u64(&mut self) -> u64 {
        rand_core::impls::next_u64_via_fill(self)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for byte in dest {
            *byte = self.0;
            self.0 = self.0.wrapping_add(1);
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core::CryptoRng for CountingRng {}
