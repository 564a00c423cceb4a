//! Risk scores at four levels (finding, file, connector, workspace): the model ([`model`]),
//! how each recorded batch keeps them current ([`state`]), and how they are read ([`read`]).

pub mod coverage;
pub mod exposure;
pub mod model;
pub mod read;
pub mod rescore;
pub mod state;

pub use model::Factors;
pub use read::{Level, Query, RiskError, RiskScore, connectors, forget_connector, list, workspace};
