//! The console's static files, compiled in.

/// The stylesheet, served at [`STYLESHEET_PATH`].
pub const STYLESHEET: &str = include_str!("../assets/console.css");

/// Where the stylesheet is served; its name changes with its content, so it may be cached
/// for good.
pub const STYLESHEET_PATH: &str = "/console/assets/console-1.css";

/// The Content-Security-Policy of every console page: nothing but this origin's stylesheet
/// and images, no script at all, forms posting only here, never framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
