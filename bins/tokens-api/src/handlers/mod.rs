pub mod grants;
pub mod health;
pub mod openapi;
pub mod policies;
pub mod tokenize;
pub mod usage;
pub mod vault;
