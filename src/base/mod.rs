//! The ground floor: the vocabulary every other module speaks, and nothing else.
//!
//! Owns the backend-neutral operations and what executing one yields (`op`), table
//! definitions and row values (`table`), the durability vocabulary (`durability`), a user's parsed SQL script (`script`) and custom operation (`custom`), the digest their answers are compared by (`digest`), counter-based randomness (`rng`, and the zipfian
//! draw in `zipfian`), which shard of a plan a process runs (`shard`), the directories that live as long as one process and the sweep of those a dead process left (`scratch`), the worker token and its HMAC tags (`secret`), the one spelling of a JSON value that hashes and tags cover (`canonical`), how a length of time reads (`span`) and the shape of one run's measurement (`measurement`). Must not import any other dbsweep module
//! but `error`: everything else stands on this.

pub mod canonical;
pub mod custom;
pub mod digest;
pub mod durability;
pub mod measurement;
pub mod op;
pub mod rng;
pub mod scratch;
pub mod script;
pub mod secret;
pub mod shard;
pub mod span;
pub mod suggest;
pub mod table;
pub mod zipfian;
