//! The storage emulators the connector tests stand on: each installs itself on first use, starts
//! on a free loopback port, answers, and is gone when dropped.

use testkit::emulators::{self, http_status};

#[test]
fn moto_azurite_and_fake_gcs_start_answer_and_stop() {
    let moto = emulators::moto(&[]);
    assert_eq!(http_status(moto.port, "/moto-api/"), Some(200));

    let azurite = emulators::azurite(None);
    // Unauthenticated listing is refused: the account exists and wants credentials.
    assert_eq!(
        http_status(azurite.port, "/devstoreaccount1?comp=list"),
        Some(403)
    );

    let seed = std::env::temp_dir().join(format!("fake-gcs-seed-{}", std::process::id()));
    std::fs::create_dir_all(seed.join("people")).unwrap();
    std::fs::write(seed.join("people/a.csv"), "name,ssn\nAnn,123-45-6789\n").unwrap();
    let gcs = emulators::fake_gcs(&seed);
    assert_eq!(http_status(gcs.port, "/storage/v1/b/people/o"), Some(200));
    let _ = std::fs::remove_dir_all(&seed);

    let ports = [moto.port, azurite.port, gcs.port];
    drop((moto, azurite, gcs));
    for port in ports {
        assert_eq!(
            http_status(port, "/"),
            None,
            "port {port} still answers after drop"
        );
    }
}
