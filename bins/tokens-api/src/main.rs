//! `tokens-api`: the Tokenization API. Configuration: see [`tokens_api::Config`].

use std::process::ExitCode;

#[actix_web::main]
async fn main() -> ExitCode {
    let config = match tokens_api::Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("tokens-api: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    boot::init_tracing(config.common.log_format);
    match tokens_api::run(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "tokens-api failed");
            ExitCode::FAILURE
        }
    }
}
