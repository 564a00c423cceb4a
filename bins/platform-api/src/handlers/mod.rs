pub mod connectors;
pub mod health;
pub mod openapi;
pub mod scans;
pub mod settings;
