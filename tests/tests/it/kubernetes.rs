//! `deploy/kubernetes/`: every manifest is a valid Kubernetes object (kubernetes-validate, with
//! KEDA's kinds checked here, since it has no schema for them), sets only variables the
//! binaries read and secrets only from Secrets, runs locked down, configures services that start
//! and answer their readiness probes, and scales scan-worker on a query that counts what the
//! coordinator hands out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use diesel::sql_types::{BigInt, Integer, Text, Uuid as SqlUuid};
use diesel_async::{
    AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _, SimpleAsyncConnection as _,
};
use integration_tests::{Service, TestApp};
use serde::Deserialize as _;
use serde_json::Value;
use uuid::Uuid;

/// The Kubernetes versions the manifests are validated against: the oldest the README supports
/// and the newest kubernetes-validate knows.
const VERSIONS: [&str; 2] = ["1.29.0", "1.37.0"];

/// KEDA's API group and the kinds of it the manifests use. kubernetes-validate has no schema for
/// them: it skips them with a warning, and [`keda_problems`] checks them instead.
const KEDA_API: &str = "keda.sh/v1alpha1";
const KEDA_KINDS: [&str; 2] = ["ScaledObject", "TriggerAuthentication"];

/// The fields of a ScaledObject's spec and of its triggers in KEDA 2.x's CRD: anything else is
/// a misspelling, which the API server would refuse or drop.
const SCALED_OBJECT_FIELDS: [&str; 10] = [
    "advanced",
    "cooldownPeriod",
    "fallback",
    "idleReplicaCount",
    "initialCooldownPeriod",
    "maxReplicaCount",
    "minReplicaCount",
    "pollingInterval",
    "scaleTargetRef",
    "triggers",
];
const TRIGGER_FIELDS: [&str; 6] = [
    "authenticationRef",
    "metadata",
    "metricType",
    "name",
    "type",
    "useCachedMetrics",
];

/// Variables that hold a secret: set only from a Secret, never as a literal or from a ConfigMap.
const SECRET_VARIABLES: [&str; 6] = [
    "DATABASE_URL",
    "DPS_MASTER_KEY",
    "AUTH_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_CLIENT_SECRET",
];

/// The image placeholder the README documents.
const IMAGE: &str = "ghcr.io/example/dps:0.1.0";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn manifests_dir() -> PathBuf {
    workspace().join("deploy/kubernetes")
}

/// The `*.yaml` files of `dir`, sorted.
fn manifest_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// One object of a manifest, and the file it is in.
#[derive(Debug, Clone)]
struct Object {
    file: String,
    value: Value,
}

impl Object {
    fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or_default()
    }

    fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn is_keda(&self) -> bool {
        self.value["apiVersion"]
            .as_str()
            .is_some_and(|api| api.starts_with("keda.sh/"))
    }
}

/// Every object of `files`, in order, read as YAML.
fn objects(files: &[PathBuf]) -> Vec<Object> {
    let mut objects = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path).unwrap();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for document in serde_norway::Deserializer::from_str(&text) {
            let value =
                Value::deserialize(document).unwrap_or_else(|e| panic!("{file}: not YAML: {e}"));
            if !value.is_null() {
                objects.push(Object {
                    file: file.clone(),
                    value,
                });
            }
        }
    }
    objects
}

fn find<'a>(objects: &'a [Object], kind: &str, name: &str) -> &'a Value {
    &objects
        .iter()
        .find(|o| o.kind() == kind && o.name() == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/kubernetes"))
        .value
}

fn find_mut<'a>(objects: &'a mut [Object], kind: &str) -> &'a mut Value {
    &mut objects
        .iter_mut()
        .find(|o| o.kind() == kind)
        .unwrap_or_else(|| panic!("no {kind} in deploy/kubernetes"))
        .value
}

/// Runs kubernetes-validate, strictly (unknown fields are errors), over `files` against each of
/// [`VERSIONS`]. Ok with the number of objects it validated; Err with every error, and every
/// object it skipped for want of a schema other than KEDA's (an `apps/v2` Deployment is skipped
/// that way, so a skip is a failure unless it is one of KEDA's kinds).
fn kubernetes_validate(files: &[PathBuf]) -> Result<usize, String> {
    let mut command = Command::new(testkit::emulators::kubernetes_validate());
    command.arg("--strict");
    for version in VERSIONS {
        command.args(["--kubernetes-version", version]);
    }
    let output = command
        .args(files)
        .output()
        .unwrap_or_else(|e| panic!("running kubernetes-validate: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut validated = 0;
    let mut problems = Vec::new();
    for line in stdout.lines() {
        if line.starts_with("INFO ") && line.contains(" passed for resource ") {
            validated += 1;
        } else if line.starts_with("WARN ")
            && KEDA_KINDS.iter().any(|kind| {
                line.contains(&format!(
                    "Couldn't find schema for kind {kind} with api version {KEDA_API} "
                ))
            })
        {
            // KEDA's kinds: checked by keda_problems.
        } else {
            problems.push(line.to_owned());
        }
    }
    if !output.status.success() {
        problems.push(format!(
            "kubernetes-validate exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if problems.is_empty() {
        Ok(validated)
    } else {
        Err(problems.join("\n"))
    }
}

/// What KEDA would refuse, or what would leave a KEDA object pointing at nothing, in the KEDA
/// objects of `objects`: the fields KEDA requires, the types its CRDs give them, and that each
/// reference (the scaled Deployment, the TriggerAuthentication, the Secret and its key) names
/// an object of the manifests.
fn keda_problems(objects: &[Object]) -> Vec<String> {
    let exists =
        |kind: &str, name: &str| objects.iter().any(|o| o.kind() == kind && o.name() == name);
    let secret_has = |name: &str, key: &str| {
        objects.iter().any(|o| {
            o.kind() == "Secret"
                && o.name() == name
                && (o.value["stringData"].get(key).is_some() || o.value["data"].get(key).is_some())
        })
    };
    let mut problems = Vec::new();
    for object in objects.iter().filter(|o| o.is_keda()) {
        let at = format!("{}: {} {}", object.file, object.kind(), object.name());
        let mut problem = |what: String| problems.push(format!("{at}: {what}"));
        let value = &object.value;
        if value["apiVersion"] != KEDA_API {
            problem(format!("apiVersion must be {KEDA_API}"));
        }
        if object.name().is_empty() {
            problem("metadata.name is required".into());
        }
        let spec = &value["spec"];
        match object.kind() {
            "ScaledObject" => {
                for key in spec.as_object().into_iter().flat_map(|s| s.keys()) {
                    if !SCALED_OBJECT_FIELDS.contains(&key.as_str()) {
                        problem(format!("spec.{key} is not a field of a ScaledObject"));
                    }
                }
                match spec["scaleTargetRef"]["name"].as_str() {
                    None | Some("") => problem("spec.scaleTargetRef.name is required".into()),
                    Some(target) => {
                        let kind = spec["scaleTargetRef"]["kind"]
                            .as_str()
                            .unwrap_or("Deployment");
                        if !exists(kind, target) {
                            problem(format!("spec.scaleTargetRef names no {kind} {target}"));
                        }
                    }
                }
                for field in [
                    "pollingInterval",
                    "cooldownPeriod",
                    "minReplicaCount",
                    "maxReplicaCount",
                ] {
                    if spec.get(field).is_some_and(|v| !v.is_u64()) {
                        problem(format!("spec.{field} must be a whole number"));
                    }
                }
                if let (Some(min), Some(max)) = (
                    spec["minReplicaCount"].as_u64(),
                    spec["maxReplicaCount"].as_u64(),
                ) && min > max
                {
                    problem("minReplicaCount is above maxReplicaCount".into());
                }
                let triggers = spec["triggers"].as_array().cloned().unwrap_or_default();
                if triggers.is_empty() {
                    problem("spec.triggers needs a trigger".into());
                }
                for (i, trigger) in triggers.iter().enumerate() {
                    let at = format!("spec.triggers[{i}]");
                    for key in trigger.as_object().into_iter().flat_map(|t| t.keys()) {
                        if !TRIGGER_FIELDS.contains(&key.as_str()) {
                            problem(format!("{at}.{key} is not a field of a trigger"));
                        }
                    }
                    let Some(metadata) = trigger["metadata"].as_object() else {
                        problem(format!("{at}.metadata is required"));
                        continue;
                    };
                    // The CRD types metadata as a map of strings: a bare number is refused.
                    for (key, value) in metadata {
                        if !value.is_string() {
                            problem(format!("{at}.metadata.{key} must be a string"));
                        }
                    }
                    let number = |key: &str| {
                        metadata
                            .get(key)
                            .and_then(Value::as_str)
                            .and_then(|v| v.parse::<f64>().ok())
                    };
                    if trigger["type"] != "postgresql" {
                        problem(format!(
                            "{at}.type must be postgresql, the scaler this is checked for"
                        ));
                        continue;
                    }
                    if metadata
                        .get("query")
                        .and_then(Value::as_str)
                        .is_none_or(|q| q.trim().is_empty())
                    {
                        problem(format!("{at}.metadata.query is required"));
                    }
                    // KEDA refuses a ScaledObject's postgresql trigger without a target above 0.
                    if number("targetQueryValue").is_none_or(|v| v <= 0.0) {
                        problem(format!(
                            "{at}.metadata.targetQueryValue must be a number above 0"
                        ));
                    }
                    if metadata.contains_key("activationTargetQueryValue")
                        && number("activationTargetQueryValue").is_none()
                    {
                        problem(format!(
                            "{at}.metadata.activationTargetQueryValue must be a number"
                        ));
                    }
                    // The connection string is secret: it must come from a TriggerAuthentication
                    // that supplies the `connection` parameter.
                    let Some(auth) = trigger["authenticationRef"]["name"].as_str() else {
                        problem(format!("{at}.authenticationRef.name is required"));
                        continue;
                    };
                    let supplies_connection =
                        objects.iter().any(|o| {
                            o.kind() == "TriggerAuthentication"
                                && o.name() == auth
                                && o.value["spec"]["secretTargetRef"].as_array().is_some_and(
                                    |refs| refs.iter().any(|r| r["parameter"] == "connection"),
                                )
                        });
                    if !supplies_connection {
                        problem(format!(
                            "{at}.authenticationRef names no TriggerAuthentication {auth} supplying `connection`"
                        ));
                    }
                }
            }
            "TriggerAuthentication" => {
                let refs = spec["secretTargetRef"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if refs.is_empty() {
                    problem("spec.secretTargetRef needs an entry".into());
                }
                for (i, entry) in refs.iter().enumerate() {
                    for key in entry.as_object().into_iter().flat_map(|e| e.keys()) {
                        if !["parameter", "name", "key"].contains(&key.as_str()) {
                            problem(format!("spec.secretTargetRef[{i}].{key} is not a field"));
                        }
                    }
                    let field = |f: &str| entry[f].as_str().filter(|v| !v.is_empty());
                    match (field("parameter"), field("name"), field("key")) {
                        (Some(_), Some(name), Some(key)) => {
                            if !secret_has(name, key) {
                                problem(format!(
                                    "spec.secretTargetRef[{i}] names no Secret {name} with key {key}"
                                ));
                            }
                        }
                        _ => problem(format!(
                            "spec.secretTargetRef[{i}] needs parameter, name and key"
                        )),
                    }
                }
            }
            other => problem(format!("{other} is not a KEDA kind these checks know")),
        }
    }
    problems
}

#[test]
fn manifests_are_valid_kubernetes_objects() {
    let files = manifest_files(&manifests_dir());
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "config.yaml",
            "migrate-job.yaml",
            "platform-api.yaml",
            "scan-worker.yaml",
            "secrets.example.yaml",
            "tokens-api.yaml",
        ]
    );
    let objects = objects(&files);
    let validated = kubernetes_validate(&files).unwrap_or_else(|e| panic!("{e}"));
    let others = objects.iter().filter(|o| !o.is_keda()).count();
    assert_eq!(
        validated,
        others * VERSIONS.len(),
        "every object but KEDA's is validated against each version"
    );
    let keda: BTreeSet<&str> = objects
        .iter()
        .filter(|o| o.is_keda())
        .map(Object::kind)
        .collect();
    assert_eq!(keda, BTreeSet::from(KEDA_KINDS));
    let problems = keda_problems(&objects);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A change that breaks the manifests' objects.
type Breakage = fn(&mut Vec<Object>);

#[test]
fn broken_manifests_are_refused() {
    let dir = std::env::temp_dir().join(format!("dps-kubernetes-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = std::fs::read_to_string(manifests_dir().join("tokens-api.yaml")).unwrap();
    for (what, from, to, reason) in [
        (
            "a misspelt field",
            "readinessProbe:",
            "readinesProbe:",
            "'readinesProbe' was unexpected",
        ),
        (
            "a port given as a string",
            "containerPort: 8080",
            "containerPort: \"8080\"",
            "'8080' is not of type 'integer'",
        ),
        (
            "an API version Kubernetes does not have",
            "apiVersion: apps/v1\nkind: Deployment",
            "apiVersion: apps/v2\nkind: Deployment",
            "Couldn't find schema for kind Deployment with api version apps/v2",
        ),
    ] {
        assert!(tokens.contains(from), "{from}");
        let file = dir.join("broken.yaml");
        std::fs::write(&file, tokens.replacen(from, to, 1)).unwrap();
        match kubernetes_validate(&[file]) {
            Ok(_) => panic!("{what} passed"),
            Err(problems) => assert!(problems.contains(reason), "{what}: {problems}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();

    let good = objects(&manifest_files(&manifests_dir()));
    assert!(keda_problems(&good).is_empty());
    let breakages: [(&str, Breakage); 8] = [
        ("a misspelt ScaledObject field", |o| {
            let spec = find_mut(o, "ScaledObject")["spec"].as_object_mut().unwrap();
            let max = spec.remove("maxReplicaCount").unwrap();
            spec.insert("maxReplicas".into(), max);
        }),
        ("a misspelt trigger field", |o| {
            find_mut(o, "ScaledObject")["spec"]["triggers"][0]["useCachedMetric"] = true.into();
        }),
        ("a ScaledObject without a target", |o| {
            find_mut(o, "ScaledObject")["spec"]
                .as_object_mut()
                .unwrap()
                .remove("scaleTargetRef");
        }),
        (
            "a ScaledObject scaling a Deployment that is not there",
            |o| {
                find_mut(o, "ScaledObject")["spec"]["scaleTargetRef"]["name"] =
                    "scan-workers".into();
            },
        ),
        ("a trigger target given as a number", |o| {
            find_mut(o, "ScaledObject")["spec"]["triggers"][0]["metadata"]["targetQueryValue"] =
                1.into();
        }),
        ("a trigger without a query", |o| {
            find_mut(o, "ScaledObject")["spec"]["triggers"][0]["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("query");
        }),
        (
            "a TriggerAuthentication naming a key the Secret does not have",
            |o| {
                find_mut(o, "TriggerAuthentication")["spec"]["secretTargetRef"][0]["key"] =
                    "conection".into();
            },
        ),
        ("a TriggerAuthentication that is not there", |o| {
            o.retain(|o| o.kind() != "TriggerAuthentication");
        }),
    ];
    for (what, breakage) in breakages {
        let mut broken = good.clone();
        breakage(&mut broken);
        assert!(!keda_problems(&broken).is_empty(), "{what} passed");
    }
}

/// A container's environment as the kubelet builds it from these objects, with each Secret's
/// value from `secret(name, key)`.
fn container_env(
    objects: &[Object],
    container: &Value,
    secret: &dyn Fn(&str, &str) -> String,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for from in container["envFrom"].as_array().into_iter().flatten() {
        if let Some(name) = from["configMapRef"]["name"].as_str() {
            for (key, value) in find(objects, "ConfigMap", name)["data"]
                .as_object()
                .unwrap()
            {
                env.insert(key.clone(), value.as_str().unwrap().to_owned());
            }
        } else if let Some(name) = from["secretRef"]["name"].as_str() {
            let keys = find(objects, "Secret", name)["stringData"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for key in keys.keys() {
                env.insert(key.clone(), secret(name, key));
            }
        } else {
            panic!("unknown envFrom {from}");
        }
    }
    for var in container["env"].as_array().into_iter().flatten() {
        let name = var["name"].as_str().unwrap().to_owned();
        let value = if let Some(value) = var["value"].as_str() {
            value.to_owned()
        } else if let Some(r) = var["valueFrom"].get("configMapKeyRef") {
            find(objects, "ConfigMap", r["name"].as_str().unwrap())["data"]
                [r["key"].as_str().unwrap()]
            .as_str()
            .unwrap_or_else(|| panic!("ConfigMap {} has no {}", r["name"], r["key"]))
            .to_owned()
        } else if let Some(r) = var["valueFrom"].get("secretKeyRef") {
            secret(r["name"].as_str().unwrap(), r["key"].as_str().unwrap())
        } else {
            panic!("unknown env entry {var}");
        };
        env.insert(name, value);
    }
    env
}

/// The value `secrets.example.yaml` gives a Secret's key.
fn example_secret(objects: &[Object], name: &str, key: &str) -> String {
    find(objects, "Secret", name)["stringData"][key]
        .as_str()
        .unwrap_or_else(|| panic!("Secret {name} has no {key}"))
        .to_owned()
}

/// Every pod template of the manifests, with where it is.
fn pod_specs(objects: &[Object]) -> Vec<(String, &Value)> {
    objects
        .iter()
        .filter(|o| matches!(o.kind(), "Deployment" | "Job"))
        .map(|o| {
            (
                format!("{} {}", o.kind(), o.name()),
                &o.value["spec"]["template"]["spec"],
            )
        })
        .collect()
}

/// The text of every Rust source of the binaries and the crates they use (not testkit's, not
/// tests').
fn rust_sources(dir: &Path, into: &mut String) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if !matches!(&*name, "target" | "testkit" | "tests" | "benches") {
                rust_sources(&path, into);
            }
        } else if name.ends_with(".rs") {
            into.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
}

#[test]
fn manifests_set_only_variables_the_binaries_read() {
    let objects = objects(&manifest_files(&manifests_dir()));
    let mut sources = String::new();
    rust_sources(&workspace().join("bins"), &mut sources);
    rust_sources(&workspace().join("crates"), &mut sources);
    let mut unread = BTreeSet::new();
    for (at, pod) in pod_specs(&objects) {
        for container in pod["containers"].as_array().unwrap() {
            let env = container_env(&objects, container, &|name, key| {
                example_secret(&objects, name, key)
            });
            assert!(!env.is_empty(), "{at}");
            for name in env.keys() {
                if !sources.contains(&format!("\"{name}\"")) {
                    unread.insert(format!("{at}: {name}"));
                }
            }
        }
    }
    assert!(unread.is_empty(), "variables no binary reads: {unread:?}");
}

#[test]
fn containers_are_locked_down_and_take_secrets_only_from_secrets() {
    let objects = objects(&manifest_files(&manifests_dir()));
    // Secrets are shipped as an example only, with placeholders.
    for secret in objects.iter().filter(|o| o.kind() == "Secret") {
        assert_eq!(secret.file, "secrets.example.yaml", "{}", secret.name());
        assert!(
            secret.value.get("data").is_none(),
            "{}: placeholders go in stringData",
            secret.name()
        );
        for (key, value) in secret.value["stringData"].as_object().unwrap() {
            assert!(
                value.as_str().unwrap().contains("REPLACE-ME"),
                "{}: {key} is no placeholder",
                secret.name()
            );
        }
    }
    for config in objects.iter().filter(|o| o.kind() == "ConfigMap") {
        for key in config.value["data"].as_object().unwrap().keys() {
            assert!(
                !SECRET_VARIABLES.contains(&key.as_str()),
                "ConfigMap {}: {key}",
                config.name()
            );
        }
    }
    let pods = pod_specs(&objects);
    assert_eq!(
        pods.len(),
        4,
        "tokens-api, platform-api, scan-worker, dps-migrate"
    );
    for (at, pod) in pods {
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{at}");
        assert!(
            pod["securityContext"]["runAsUser"]
                .as_u64()
                .is_some_and(|u| u > 0),
            "{at}"
        );
        assert_eq!(pod["automountServiceAccountToken"], false, "{at}");
        for container in pod["containers"].as_array().unwrap() {
            assert_eq!(container["image"], IMAGE, "{at}");
            let security = &container["securityContext"];
            assert_eq!(security["runAsNonRoot"], true, "{at}");
            assert_eq!(security["readOnlyRootFilesystem"], true, "{at}");
            assert_eq!(security["allowPrivilegeEscalation"], false, "{at}");
            assert_eq!(
                security["capabilities"]["drop"],
                serde_json::json!(["ALL"]),
                "{at}"
            );
            for bound in ["requests", "limits"] {
                for resource in ["cpu", "memory"] {
                    assert!(
                        container["resources"][bound][resource].is_string(),
                        "{at}: {bound}.{resource}"
                    );
                }
            }
            for var in container["env"].as_array().into_iter().flatten() {
                let name = var["name"].as_str().unwrap();
                if SECRET_VARIABLES.contains(&name) {
                    assert!(
                        var["valueFrom"]["secretKeyRef"].is_object(),
                        "{at}: {name} must come from a Secret"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn services_accept_their_manifests_and_answer_their_readiness_probes() {
    let objects = objects(&manifest_files(&manifests_dir()));
    let db = testkit::database().await;
    let master_key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let test_secret = |_: &str, key: &str| match key {
        "DATABASE_URL" => db.url.clone(),
        "DPS_MASTER_KEY" => master_key.clone(),
        other => panic!("no test value for {other}"),
    };
    for (service, name) in [
        (Service::Tokens, "tokens-api"),
        (Service::Platform, "platform-api"),
    ] {
        let deployment = find(&objects, "Deployment", name);
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let env = container_env(&objects, container, &test_secret);
        let lookup = |k: &str| env.get(k).cloned();
        let common = match service {
            Service::Tokens => tokens_api::Config::from_lookup(&lookup).map(|c| c.common),
            Service::Platform => platform_api::Config::from_lookup(&lookup).map(|c| c.common),
        }
        .unwrap_or_else(|e| panic!("{name} refuses its manifest's configuration: {e}"));
        assert!(
            !common.migrate_on_start,
            "{name}: the dps-migrate Job migrates"
        );
        assert!(
            common.bind_addr.ip().is_unspecified(),
            "{name}: listens on every interface"
        );

        // The port the probes and the Service name is the one the service binds.
        let http = container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "http")
            .unwrap();
        assert_eq!(
            http["containerPort"],
            u64::from(common.bind_addr.port()),
            "{name}"
        );
        assert_eq!(
            container["readinessProbe"]["httpGet"]["port"], "http",
            "{name}"
        );
        assert_eq!(
            container["livenessProbe"]["tcpSocket"]["port"], "http",
            "{name}"
        );
        let port = &find(&objects, "Service", name)["spec"]["ports"][0];
        assert_eq!(port["targetPort"], "http", "{name}");
        assert_eq!(port["port"], http["containerPort"], "{name}");

        // The example Secrets cannot be deployed as they are: the master key is refused.
        let example = container_env(&objects, container, &|secret, key| {
            example_secret(&objects, secret, key)
        });
        let lookup = |k: &str| example.get(k).cloned();
        let refused = match service {
            Service::Tokens => tokens_api::Config::from_lookup(&lookup).err(),
            Service::Platform => platform_api::Config::from_lookup(&lookup).err(),
        };
        assert_eq!(
            refused.map(|e| e.variable),
            Some("DPS_MASTER_KEY"),
            "{name}"
        );

        // The running service, with the manifest's settings but the test's address and
        // identity provider, answers the readiness probe's path with 200.
        let path = container["readinessProbe"]["httpGet"]["path"]
            .as_str()
            .unwrap()
            .to_owned();
        let settings: Vec<(String, String)> = env
            .iter()
            .filter(|(k, _)| {
                !SECRET_VARIABLES.contains(&k.as_str())
                    && !matches!(
                        k.as_str(),
                        "BIND_ADDR" | "DPS_AUTH_JWKS" | "DPS_AUTH_ISSUER" | "DPS_AUTH_AUDIENCE"
                    )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let app = TestApp::spawn_with(service, |env| env.extend(settings)).await;
        // As the kubelet probes: again until ready. Readiness gives its database check 2 s,
        // which a machine busy with builds can take on a fresh service's first connections.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            let response = app
                .http
                .get(format!("{}{path}", app.origin))
                .send()
                .await
                .unwrap();
            if response.status() == 200 || std::time::Instant::now() > deadline {
                break response.status();
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        };
        assert_eq!(status, 200, "{name}: GET {path}");
        app.stop().await;
    }

    // scan-worker is configured as GET /scans/:id/deployment-config configures it: the scan,
    // and the coordinator platform-api names, which the worker's outbound rules accept.
    let worker = find(&objects, "ConfigMap", "scan-worker");
    assert!(ids::ScanId::parse(worker["data"]["SCAN_ID"].as_str().unwrap()).is_some());
    let coordinator = worker["data"]["COORDINATOR_URL"].as_str().unwrap();
    assert_eq!(
        coordinator,
        find(&objects, "ConfigMap", "platform-api")["data"]["DPS_COORDINATOR_URL"]
    );
    assert!(
        egress::Egress::default().check_url(coordinator).is_ok(),
        "{coordinator}"
    );
}

async fn insert_scan(conn: &mut AsyncPgConnection, status: &str, max_workers: i32) -> Uuid {
    let scan = Uuid::new_v4();
    diesel::sql_query(
        "INSERT INTO scans (tenant_id, scan_id, status, kind, origin, options, worker_token_hash, max_workers)
         VALUES ('acme', $1, $2, 'full', 'parallel', '{}', '\\x00', $3)",
    )
    .bind::<SqlUuid, _>(scan)
    .bind::<Text, _>(status)
    .bind::<Integer, _>(max_workers)
    .execute(conn)
    .await
    .unwrap();
    scan
}

/// Adds chunks `first..first + n` of `scan` in `status`, ten objects each.
async fn insert_chunks(conn: &mut AsyncPgConnection, scan: Uuid, first: i32, n: i32, status: &str) {
    diesel::sql_query(
        "INSERT INTO scan_chunks (tenant_id, scan_id, chunk_no, start_index, end_index, status)
         SELECT 'acme', $1, c, c * 10, c * 10 + 9, $4 FROM generate_series($2, $2 + $3 - 1) c",
    )
    .bind::<SqlUuid, _>(scan)
    .bind::<Integer, _>(first)
    .bind::<Integer, _>(n)
    .bind::<Text, _>(status)
    .execute(conn)
    .await
    .unwrap();
}

/// Claims chunks of `scan` as a worker does until the claim hands out none; how many it did.
async fn claim_all(conn: &mut AsyncPgConnection, scan: Uuid) -> usize {
    let tenant: ids::TenantId = "acme".parse().unwrap();
    let mut claims = 0;
    while scans::lease::claim(
        conn,
        "keda-test",
        Some((&tenant, ids::ScanId::from_uuid(scan))),
        30,
    )
    .await
    .unwrap()
    .is_some()
    {
        claims += 1;
    }
    claims
}

/// The ScaledObject's query for `scan`, run as KEDA's role.
async fn keda_count(conn: &mut AsyncPgConnection, role: &str, query: &str, scan: Uuid) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    conn.batch_execute(&format!("SET ROLE \"{role}\""))
        .await
        .unwrap();
    let count: Count = diesel::sql_query(format!(
        "SELECT ({}) AS n",
        query.replace(NIL, &scan.to_string())
    ))
    .get_result(conn)
    .await
    .unwrap_or_else(|e| panic!("the ScaledObject's query fails: {e}"));
    conn.batch_execute("RESET ROLE").await.unwrap();
    count.n
}

/// The placeholder scan id of scan-worker.yaml.
const NIL: &str = "00000000-0000-0000-0000-000000000000";

#[tokio::test]
async fn the_keda_query_counts_the_chunks_that_want_a_worker() {
    let objects = objects(&manifest_files(&manifests_dir()));
    let query =
        find(&objects, "ScaledObject", "scan-worker")["spec"]["triggers"][0]["metadata"]["query"]
            .as_str()
            .unwrap()
            .to_owned();
    assert_eq!(
        find(&objects, "ConfigMap", "scan-worker")["data"]["SCAN_ID"],
        NIL
    );
    assert_eq!(
        query.matches(NIL).count(),
        1,
        "the query names the ConfigMap's scan"
    );

    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    // KEDA's role, with exactly the grants the README gives it.
    let readme = std::fs::read_to_string(manifests_dir().join("README.md")).unwrap();
    let role = format!("keda_{}", db.name);
    let grants: Vec<String> = readme
        .lines()
        .filter(|l| l.starts_with("GRANT "))
        .map(|l| l.replace("dps_keda", &format!("\"{role}\"")))
        .collect();
    assert_eq!(grants.len(), 2, "{grants:?}");
    conn.batch_execute(&format!(
        "CREATE ROLE \"{role}\" NOLOGIN; {}",
        grants.join(" ")
    ))
    .await
    .unwrap();
    let role = role.as_str();

    assert_eq!(
        keda_count(&mut conn, role, &query, Uuid::nil()).await,
        0,
        "an empty database"
    );

    let scan = insert_scan(&mut conn, "running", 8).await;
    insert_chunks(&mut conn, scan, 0, 5, "pending").await;
    insert_chunks(&mut conn, scan, 5, 2, "completed").await;
    insert_chunks(&mut conn, scan, 7, 1, "failed").await;
    let other = insert_scan(&mut conn, "running", 8).await;
    insert_chunks(&mut conn, other, 0, 3, "pending").await;
    let cancelled = insert_scan(&mut conn, "cancelled", 8).await;
    insert_chunks(&mut conn, cancelled, 0, 4, "pending").await;

    assert_eq!(
        keda_count(&mut conn, role, &query, scan).await,
        5,
        "the pending chunks, not the completed or failed ones, nor another scan's"
    );
    assert_eq!(keda_count(&mut conn, role, &query, other).await, 3);
    assert_eq!(
        keda_count(&mut conn, role, &query, cancelled).await,
        0,
        "a scan that is not running"
    );
    assert_eq!(claim_all(&mut conn, cancelled).await, 0);

    // The claim hands out exactly the chunks counted, and their workers keep being counted
    // while they hold them.
    assert_eq!(claim_all(&mut conn, scan).await, 5);
    assert_eq!(
        keda_count(&mut conn, role, &query, scan).await,
        5,
        "held chunks keep their workers"
    );

    // Two end; chunk 2's lease runs out (claimable again); chunk 3's runs out for the third
    // time (given up: neither claimable nor held); chunk 4 is still held.
    conn.batch_execute(&format!(
        "UPDATE scan_chunks SET status = 'completed', completed_at = now(), lease_until = NULL
          WHERE scan_id = '{scan}' AND chunk_no IN (0, 1);
         UPDATE scan_chunks SET lease_until = now() - interval '1 minute'
          WHERE scan_id = '{scan}' AND chunk_no = 2;
         UPDATE scan_chunks SET lease_until = now() - interval '1 minute', attempts = 3
          WHERE scan_id = '{scan}' AND chunk_no = 3;"
    ))
    .await
    .unwrap();
    assert_eq!(
        keda_count(&mut conn, role, &query, scan).await,
        2,
        "chunk 2, due, and chunk 4, held"
    );
    assert_eq!(
        claim_all(&mut conn, scan).await,
        1,
        "the claim takes chunk 2 and leaves chunk 3"
    );
    assert_eq!(keda_count(&mut conn, role, &query, scan).await, 2);

    // max_workers bounds the count as it bounds the claims.
    let narrow = insert_scan(&mut conn, "running", 2).await;
    insert_chunks(&mut conn, narrow, 0, 6, "pending").await;
    assert_eq!(keda_count(&mut conn, role, &query, narrow).await, 2);
    assert_eq!(claim_all(&mut conn, narrow).await, 2);
    assert_eq!(keda_count(&mut conn, role, &query, narrow).await, 2);

    conn.batch_execute(&format!("DROP OWNED BY \"{role}\"; DROP ROLE \"{role}\";"))
        .await
        .unwrap();
}
