//! `devstack`: the whole system on one machine, in one command: the dev Postgres cluster
//! (unless `DATABASE_URL` is set), migrations, a dev API key and admin token, both services in
//! this one process, through the same `configure` functions as their own binaries, and a demo:
//! an S3-compatible store with STS (`storage`) over `<DPS_DEV_DIR>/storage`, seeded with sample
//! files of every format a scan reads, a `demo` connector for the dev tenant and, on the first
//! start, its full scan (`demo`). Ctrl-C stops everything.
//!
//! `--no-demo` starts no store and makes nothing of the demo; neither does an environment that
//! sets the platform's own AWS identity or endpoints (`demo::CLOUD_VARIABLES`), since the
//! platform then goes where they say. docs/configuration.md lists the variables.
//!
//! It is a binary of its own because it links the services, and with them actix-web, which the
//! operator CLI (`dpsctl`) and `scan-worker` do not.
#![expect(clippy::print_stdout, reason = "a command-line tool reports on stdout")]

mod demo;
mod storage;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use dpsctl::dev;
use ids::TenantId;

const DEV_USER: &str = "dev-admin";
const DEV_KEY_NAME: &str = "devstack";
const DEV_TOKEN_TTL: Duration = Duration::from_secs(12 * 3600);

/// Where the demo store listens unless `STORAGE_BIND_ADDR` says otherwise: beside the
/// services' 8080 and 8081.
const STORAGE_BIND_DEFAULT: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8082);

/// The whole Data Protection Service on this machine: Postgres, both services, and a demo
/// store with sample data, a connector and its first scan.
#[derive(Debug, Parser)]
#[command(name = "devstack")]
struct Args {
    /// Start without the demo: no store, no sample data, no `demo` connector.
    #[arg(long)]
    no_demo: bool,
}

fn main() -> ExitCode {
    // First, before any thread: a PDF-reading child of this program is served and exits here.
    extract::init_isolation();
    let args = Args::parse();
    serve(args)
}

#[actix_web::main]
async fn serve(args: Args) -> ExitCode {
    boot::init_tracing(boot::LogFormat::from_env(&boot::Env::process()).unwrap_or_default());
    match up(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("devstack: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// An environment variable, unset when empty or blank (docs/configuration.md).
fn set(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

async fn up(args: Args) -> anyhow::Result<()> {
    let database = dev::database().await?;
    let url = database.url.clone();
    db::migrate(&url).await?;
    let (minter, jwks_path) = dev::dev_minter()?;
    let minter = std::sync::Arc::new(minter);
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
    // the local database, the dev identity and the demo store where the environment does not
    // say otherwise.
    let mut defaults: HashMap<&str, String> = HashMap::new();
    defaults.insert("DATABASE_URL", url.clone());
    defaults.insert("DPS_AUTH_JWKS", jwks_path.to_string_lossy().into_owned());
    defaults.insert("DPS_AUTH_ISSUER", dev::DEV_ISSUER.into());
    defaults.insert("DPS_AUTH_AUDIENCE", dev::DEV_AUDIENCE.into());
    defaults.insert(
        "DPS_MASTER_KEY_FILE",
        master_key_file.to_string_lossy().into_owned(),
    );
    // Alert webhooks and co-signing services on this machine (the README's walkthrough posts
    // alerts to a local receiver): a development setting, as its name says.
    defaults.insert(egress::ALLOW_PRIVATE_NETWORKS, "true".into());

    let switch = demo::Switch::decide(args.no_demo, set);
    // The store is bound first: the services' defaults name its address.
    let store = match switch {
        demo::Switch::On => {
            let addr = match set("STORAGE_BIND_ADDR") {
                None => STORAGE_BIND_DEFAULT,
                Some(addr) => addr.trim().parse().with_context(|| {
                    format!(
                        "STORAGE_BIND_ADDR must be an address such as 127.0.0.1:8082, not {addr:?}"
                    )
                })?,
            };
            let bound = storage::Bound::bind(addr)?;
            let endpoint = bound.endpoint();
            defaults.insert("AWS_ENDPOINT_URL_S3", endpoint.clone());
            defaults.insert("AWS_ENDPOINT_URL_STS", endpoint);
            defaults.insert("AWS_ACCESS_KEY_ID", bound.platform.id.clone());
            defaults.insert("AWS_SECRET_ACCESS_KEY", bound.platform.secret.clone());
            Some(bound)
        }
        demo::Switch::Off(_) => None,
    };

    let lookup = |service: &'static str| {
        let defaults = defaults.clone();
        move |key: &str| -> Option<String> {
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
    let mut platform_extra = platform_api::Extra::from_config(&platform_config)?;
    // The console's dev sign-in: the dev identity's users, whose tokens this process mints as
    // the dev identity provider. Cookies go over plain HTTP here, and only here.
    platform_extra.console.secure_cookies = false;
    platform_extra.console.dev_sign_in = Some(platform_api::DevSignIn {
        minter: minter.clone(),
        tenant: tenant.as_str().to_owned(),
        users: [
            (DEV_USER, &["admin", "analyst"][..]),
            ("dev-analyst", &["analyst"][..]),
        ]
        .into_iter()
        .map(|(user, roles)| platform_api::DevUser {
            user: user.to_owned(),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        })
        .collect(),
    });

    // The demo role trusts the dev tenant's external id, derived as the platform derives it.
    let demo_store = match store {
        Some(bound) => {
            let external_id = connectors::external_id(&platform_extra.external_id_key, &tenant);
            let root = dev::dev_dir().join("storage");
            let seeded = demo::files::seed(&root)?;
            let endpoint = bound.endpoint();
            bound.serve(
                &root,
                [demo::files::PUBLIC_SHARE.to_owned()].into(),
                storage::Trust {
                    role_arn: demo::ROLE_ARN.into(),
                    external_id: external_id.clone(),
                },
            )?;
            Some((endpoint, root, seeded, external_id))
        }
        None => None,
    };

    let (tokens, tokens_addr) = dps_http::start::<tokens_api::TokensApi>(
        &tokens_config.common,
        tokens_api::Extra::from_config(&tokens_config)?,
    )
    .await?;
    let (platform, platform_addr) =
        dps_http::start::<platform_api::PlatformApi>(&platform_config.common, platform_extra)
            .await?;

    let tokens_base = format!("http://{}/api/v1/tokens", reachable(tokens_addr));
    let platform_base = format!("http://{}/api/v1", reachable(platform_addr));
    println!();
    println!("The Data Protection Service is up.");
    println!(
        "  console       http://{}/console   (dev sign-in: {DEV_USER}, dev-analyst)",
        reachable(platform_addr)
    );
    println!("  tokens-api    {tokens_base}   (OpenAPI: {tokens_base}/openapi.json)");
    println!("  platform-api  {platform_base}   (OpenAPI: {platform_base}/openapi.json)");
    match (&demo_store, &switch) {
        (Some((endpoint, root, seeded, _)), _) => {
            println!(
                "  demo storage  {endpoint}   (S3 and STS, over {})",
                root.display()
            );
            print_seeded(seeded);
        }
        (None, demo::Switch::Off(why)) => println!("  demo          off: {why}"),
        (None, demo::Switch::On) => {}
    }
    println!();
    println!("Dev API key (tenant {}):", tenant);
    println!("  {}", api_key.expose());
    println!("Dev admin access token (user {DEV_USER}, roles admin,analyst, valid 12 h):");
    println!("  {token}");
    println!();
    println!("Try:");
    println!("  curl -s {tokens_base}/health");
    println!("  curl -s -H 'Authorization: Bearer {token}' {platform_base}/settings/lkg-retention");
    if demo_store.is_some() {
        println!("  curl -s -H 'Authorization: Bearer {token}' '{platform_base}/findings?limit=5'");
        println!("  (README.md, \"Scan a bucket\", walks through the rest.)");
    }
    println!();
    println!(
        "Mint more tokens: cargo run -p dpsctl -- dev-token --tenant dev --user alice --roles analyst"
    );
    println!("Ctrl-C stops everything.");
    println!();

    if let Some((_, _, _, external_id)) = demo_store {
        let api = demo::api::Api::new(platform_base, token)?;
        tokio::spawn(async move {
            // The demo is a convenience: when it fails, the stack keeps serving and says why.
            if let Err(e) = demo::run(&api, &external_id).await {
                eprintln!("devstack: demo: {e:#}");
                println!("demo: failed: {e:#}");
            }
        });
    }

    let served = tokio::try_join!(tokens, platform);
    // Stops the dev cluster if this command started it, whether or not serving failed.
    drop(database);
    served?;
    Ok(())
}

/// An address to call a service bound to `addr` at: loopback for an unspecified address
/// (`0.0.0.0:8081` is listened on, not called).
fn reachable(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port())
    } else {
        addr
    }
}

fn print_seeded(seeded: &demo::files::Seeded) {
    for (bucket, count) in &seeded.created {
        let what = if *bucket == demo::files::PUBLIC_SHARE {
            "readable by anyone, unencrypted: a contact list and customer letters"
        } else {
            "private, SSE-S3: CSV, log, NDJSON, JSON, Parquet, Avro, XLSX, DOCX, PDF, ZIP, \
             TAR.GZ, XML and HTML with planted personal data, and PII-free controls under "
        };
        let controls = if *bucket == demo::files::PUBLIC_SHARE {
            ""
        } else {
            demo::files::CONTROLS
        };
        println!("                {bucket}: {count} objects created ({what}{controls})");
    }
    for bucket in &seeded.kept {
        println!("                {bucket}: kept as it was");
    }
}
