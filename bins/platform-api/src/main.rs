//! `platform-api`: the Platform API. Configuration: see [`platform_api::Config`].

use std::process::ExitCode;

fn main() -> ExitCode {
    // First, before any thread: a PDF-reading child of this program is served and exits here.
    extract::init_isolation();
    serve()
}

#[actix_web::main]
async fn serve() -> ExitCode {
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
