//! Evaluation: running a method over a dataset ([`runner`]), one record per question
//! ([`record`]), how predictions compare with gold answers ([`metrics`]), the run's summary
//! ([`summary`]) and two runs side by side ([`compare`]).

pub mod compare;
pub mod metrics;
pub mod record;
pub mod runner;
pub mod summary;
