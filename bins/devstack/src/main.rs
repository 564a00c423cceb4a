//! `devstack`: the whole system on one machine, in one command: the dev Postgres cluster
//! (unless `DATABASE_URL` is set), migrations, a dev API key and admin token, and both services
//! in this one process, through the same `configure` functions as their own binaries. Ctrl-C
//! stops everything.
//!
//! It is a binary of its own because it links the services, and with them actix-web, which the
//! operator CLI (`dpsctl`) and `scan-worker` do not.
#![expect(clippy::print_stdout, reason = "a command-line tool reports on stdout")]

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use dpsctl::dev;
use ids::TenantId;

const DEV_USER: &str = "dev-admin";
const DEV_KEY_NAME: &str = "devstack";
const DEV_TOKEN_TTL: Duration = Duration::from_secs(12 * 3600);

fn main() -> ExitCode {
    // First, before any thread: a PDF-reading child of this program is served and exits here.
    extract::init_isolation();
    serve()
}

#[actix_web::main]
async fn serve() -> ExitCode {
    boot::init_tracing(boot::LogFormat::from_env(&boot::Env::process()).unwrap_or_default());
    match up().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("devstack: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn up() -> anyhow::Result<()> {
    let database = dev::database().await?;
    let url = database.url.clone();
    db::migrate(&url).await?;
    let (minter, jwks_path) = dev::dev_minter()?;
    let master_key_file = dev::dev_master_key_file()?;

    let tenant: TenantId = dev::DEV_TENANT.parse()?;
    let mut conn = dpsctl::connect(&url).await?;
    // One live dev key at a time: the previous run's keys are revoked, not left to pile up.
    for old in auth::api_keys::list(&mut conn, Some(&tenant)).await? {
        if old.name == DEV_KEY_NAME && old.revoked_at.is_none() {
            auth::api_keys::revoke(&mut conn, old.id).await?;
        }
    }
    let (_, api_key) =
        auth::api_keys::create(&mut conn, &tenant, Some(DEV_USER), DEV_KEY_NAME).await?;
    drop(conn);
    let token = minter.mint(
        tenant.as_str(),
        DEV_USER,
        &["admin", "analyst"],
        DEV_TOKEN_TTL,
    )?;

    // Both services read the same variables as when run on their own; the dev stack only fills in
    // the local database and the dev identity where the environment does not say otherwise.
    let mut defaults: HashMap<&str, String> = HashMap::new();
    defaults.insert("DATABASE_URL", url.clone());
    defaults.insert("DPS_AUTH_JWKS", jwks_path.to_string_lossy().into_owned());
    defaults.insert("DPS_AUTH_ISSUER", dev::DEV_ISSUER.into());
    defaults.insert("DPS_AUTH_AUDIENCE", dev::DEV_AUDIENCE.into());
    defaults.insert(
        "DPS_MASTER_KEY_FILE",
        master_key_file.to_string_lossy().into_owned(),
    );
    let lookup = |service: &'static str| {
        let defaults = defaults.clone();
        move |key: &str| -> Option<String> {
            // An empty or blank variable is unset (docs/configuration.md), so the default
            // below applies to it too.
            let set = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
            match key {
                // Each service has its own addresses: TOKENS_BIND_ADDR, PLATFORM_BIND_ADDR,
                // and likewise TOKENS_METRICS_BIND_ADDR and PLATFORM_METRICS_BIND_ADDR.
                "BIND_ADDR" | "METRICS_BIND_ADDR" => set(&format!("{service}_{key}")),
                // Migrations already ran above.
                "DPS_MIGRATE_ON_START" => Some("false".into()),
                // A dev machine has two cores; two workers each keep both services responsive.
                "HTTP_WORKERS" => set(key).or(Some("2".into())),
                _ => set(key).or_else(|| defaults.get(key).cloned()),
            }
        }
    };
    let tokens_config = tokens_api::Config::from_lookup(&lookup("TOKENS"))?;
    let platform_config = platform_api::Config::from_lookup(&lookup("PLATFORM"))?;

    let (tokens, tokens_addr) = dps_http::start::<tokens_api::TokensApi>(
        &tokens_config.common,
        tokens_api::Extra::from_config(&tokens_config)?,
    )
    .await?;
    let (platform, platform_addr) = dps_http::start::<platform_api::PlatformApi>(
        &platform_config.common,
        platform_api::Extra::from_config(&platform_config)?,
    )
    .await?;

    let tokens_base = format!("http://{tokens_addr}/api/v1/tokens");
    let platform_base = format!("http://{platform_addr}/api/v1");
    println!();
    println!("The Data Protection Service is up.");
    println!("  tokens-api    {tokens_base}   (OpenAPI: {tokens_base}/openapi.json)");
    println!("  platform-api  {platform_base}   (OpenAPI: {platform_base}/openapi.json)");
    println!();
    println!("Dev API key (tenant {}):", tenant);
    println!("  {}", api_key.expose());
    println!("Dev admin access token (user {DEV_USER}, roles admin,analyst, valid 12 h):");
    println!("  {token}");
    println!();
    println!("Try:");
    println!("  curl -s {tokens_base}/health");
    println!("  curl -s -H 'Authorization: Bearer {token}' {platform_base}/settings/lkg-retention");
    println!();
    println!(
        "Mint more tokens: cargo run -p dpsctl -- dev-token --tenant dev --user alice --roles analyst"
    );
    println!("Ctrl-C stops everything.");

    let served = tokio::try_join!(tokens, platform);
    // Stops the dev cluster if this command started it, whether or not serving failed.
    drop(database);
    served?;
    Ok(())
}
