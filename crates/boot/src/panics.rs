//! What a panic writes: where it happened, never what it was handling.
//!
//! The standard hook prints a panic's message to stderr, and messages made at run time carry
//! data: a string slice out of bounds quotes up to 256 bytes of the string, and an `expect` on
//! an error prints the error, which may hold a bound value. In a process that handles
//! plaintext, that is a log line holding it.

use std::panic::PanicHookInfo;

/// Replaces the panic hook with one that logs through `tracing`: the thread and the location
/// always, the message only when it is a constant of the program (a `&'static str` payload,
/// as `panic!("literal")` makes). A message formatted at run time is withheld.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(log_panic));
}

fn log_panic(info: &PanicHookInfo<'_>) {
    let thread = std::thread::current();
    let thread = thread.name().unwrap_or("<unnamed>");
    let location = info
        .location()
        .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
        .unwrap_or_else(|| "<unknown>".into());
    let message = info
        .payload()
        .downcast_ref::<&'static str>()
        .copied()
        .unwrap_or("<withheld: a message made at run time may hold data>");
    tracing::error!(thread, location = %location, message, "a thread panicked");
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_panic_logs_where_it_happened_but_not_the_data_in_its_message() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        install_panic_hook();
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let value = String::from("ssn 123-45-6789");
        let slicing = std::thread::spawn({
            let dispatch = dispatch.clone();
            move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    let end = value.len() + 1;
                    value[..end].len()
                })
            }
        });
        assert!(slicing.join().is_err());
        let constant = std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || panic!("a constant message"))
        });
        assert!(constant.join().is_err());
        let _ = std::panic::take_hook();

        let logged = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(!logged.contains("123-45-6789"), "{logged}");
        assert_eq!(logged.matches("a thread panicked").count(), 2, "{logged}");
        assert!(logged.contains("panics.rs:"), "{logged}");
        assert!(logged.contains("withheld"), "{logged}");
        assert!(logged.contains("a constant message"), "{logged}");
    }
}
