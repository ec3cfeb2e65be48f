//! Evaluation: how predictions compare with gold answers ([`metrics`]).

pub mod metrics;
