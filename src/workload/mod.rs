//! Operations and how experiments turn into seeded streams of them.
//!
//! Owns the op vocabulary (`op`), counter-based randomness (`rng`) and the experiments
//! (`experiment`). Must not talk to systems or measure time.

pub mod distribution;
pub mod experiment;
pub mod op;
pub mod queries;
pub mod rng;
pub mod ycsb;

#[cfg(test)]
mod ycsb_pinned;
