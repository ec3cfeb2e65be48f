//! Evaluation: running a method over a dataset ([`runner`]), one record per question
//! ([`record`]), how predictions compare with gold answers ([`metrics`]), the run's summary
//! ([`summary`]), two runs side by side ([`compare`]) and whether their difference could be
//! chance ([`significance`]).

pub mod compare;
pub(crate) mod gold_path;
pub mod metrics;
pub mod record;
pub mod runner;
pub(crate) mod significance;
pub mod summary;
