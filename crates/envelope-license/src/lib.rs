//! The license block of `.ald` datasets and `.apr` models, and commercial packaging.
