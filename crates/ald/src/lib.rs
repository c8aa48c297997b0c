//! The `.ald` dataset format.
