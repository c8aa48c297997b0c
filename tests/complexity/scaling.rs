//! The complexity check shared by the crates' `#[ignore = "complexity: ..."]` tests (each test
//! binary includes this file by path): an input scaled 4x must cost about 4x, not 16x.
//!
//! It asserts a *ratio*, never a duration: the work runs on inputs of size `n` and `4n`, each timed
//! as the best of three runs, and `time(4n) / time(n)` must stay below [`MAX_RATIO`]. Callers pick
//! `n` so that a quadratic implementation already spends most of its time in its quadratic part at
//! `n` (4x the input then costs about 16x), while linear code costs about 4x; 8 leaves room for
//! `n log n` parts and for noise on a shared machine.

use std::time::{Duration, Instant};

/// Largest accepted `time(4n) / time(n)`.
pub(crate) const MAX_RATIO: f64 = 8.0;

fn best_of_three(run: &dyn Fn()) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Times `run` on `make(n)` and `make(4 * n)` and checks the ratio (printing the figures, for the
/// log of a `--nocapture` run).
pub(crate) fn assert_scales_linearly<T>(
    what: &str,
    n: usize,
    make: impl Fn(usize) -> T,
    run: impl Fn(&T),
) {
    let small = make(n);
    let large = make(4 * n);
    let t1 = best_of_three(&|| run(&small));
    let t4 = best_of_three(&|| run(&large));
    let ratio = t4.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    #[allow(clippy::print_stderr, reason = "reports the measured ratio")]
    {
        eprintln!("{what}: n = {n}: {t1:?}, 4n: {t4:?}, ratio {ratio:.2}");
    }
    assert!(
        ratio < MAX_RATIO,
        "{what}: 4x the input took {ratio:.1}x the time ({t1:?} -> {t4:?}); expected about 4x"
    );
}
