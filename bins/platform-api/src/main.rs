//! `platform-api`: the Platform API. Configuration: see [`platform_api::Config`].

use std::process::ExitCode;

#[actix_web::main]
async fn main() -> ExitCode {
    let config = match platform_api::Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("platform-api: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    boot::init_tracing(config.common.log_format);
    match platform_api::run(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "platform-api failed");
            ExitCode::FAILURE
        }
    }
}
