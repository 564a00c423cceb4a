pub mod health;
pub mod openapi;
