//! Operations and how experiments turn into seeded streams of them.
//!
//! Owns the experiments (`experiment`), YCSB workloads (`ycsb`), the seeded values of a user's script (`script`) and of a custom operation (`custom`) and key distributions
//! (`distribution`); the op vocabulary and counter-based randomness they use are in
//! `base`. Must not talk to systems or measure time.

pub mod custom;
pub mod distribution;
pub mod experiment;
pub mod script;
pub mod ycsb;

#[cfg(test)]
mod ycsb_pinned;
