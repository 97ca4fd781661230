//! Target URLs: parsing, validation, and the password-free form that may be shown.
//!
//! Owns the one place where a URL's password is read — its userinfo or a password query
//! parameter (`password=`, `pass=`, `passwd=`, `pwd=`, `auth=`: what the systems' drivers
//! accept) — and the system's password variable as the fallback; everything that prints
//! or saves a URL uses `redacted()` (or `redact_text` for text that is not one URL).
//! Also reads a client's password file (`~/.pgpass`, `~/.my.cnf`) the way its own client
//! does: not at all when its permissions are looser than that client accepts.
//! Must not open connections.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Query parameters that carry a password: honoured for login, never shown.
const PASSWORD_PARAMS: [&str; 5] = ["password", "pass", "passwd", "pwd", "auth"];

fn is_password_param(key: &str) -> bool {
    PASSWORD_PARAMS.iter().any(|p| key.eq_ignore_ascii_case(p))
}

/// A parsed target URL such as `postgres://bench@127.0.0.1:5432/db?layout=hstore`,
/// `redis://127.0.0.1:6379/3` or `sqlite:/tmp/x.db`; a cluster's may list several
/// `host:port` contact points separated by commas (`cassandra://h1:9042,h2:9042/ks`).
#[derive(Clone)]
pub struct TargetUrl {
    /// The URL with its first contact point only.
    inner: url::Url,
    /// The contact points after the first, as written (`host:port` or `host`).
    more_hosts: Vec<String>,
}

impl TargetUrl {
    /// Parses a URL; a bare scheme like `sqlite` means `sqlite:`.
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let with_colon;
        let text = if !text.contains(':') && !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            with_colon = format!("{text}:");
            &with_colon
        } else {
            text
        };
        let (text, more_hosts) = split_hosts(text);
        let text = text.as_str();
        let inner = url::Url::parse(text).map_err(|e| {
            Error::usage(format!(
                "malformed target URL '{}': {e}; expected e.g. postgres://user@host:5432/db or sqlite:/path/file.db",
                redact_text(text)
            ))
        })?;
        if inner.has_host() && inner.host_str().is_none_or(str::is_empty) {
            return Err(Error::usage(format!("malformed target URL '{}': missing host", redact_text(text))));
        }
        for host in &more_hosts {
            let alone = format!("{}://{host}", inner.scheme());
            if host.is_empty() || url::Url::parse(&alone).is_err() || host.contains(['@', '/']) {
                return Err(Error::usage(format!(
                    "malformed target URL '{}': bad contact point '{host}'; expected host:port[,host:port...]",
                    redact_text(text)
                )));
            }
        }
        if inner.fragment().is_some() {
            // Nothing reads a fragment, and a password after a '#' would be shown with it.
            return Err(Error::usage(format!(
                "malformed target URL '{}': '#' starts a fragment, which no target takes; write '#' in a password as %23",
                redact_text(text)
            )));
        }
        check_options_once(&inner, || redact_text(text))?;
        Ok(TargetUrl { inner, more_hosts })
    }

    /// The URL with `options` (`key=value&...` as written after a `?`) after its own query
    /// options, e.g. a study's options for the servers it spawns; each option still once.
    pub fn with_options(&self, options: &str) -> Result<TargetUrl> {
        let mut inner = self.inner.clone();
        let query = match inner.query() {
            Some(own) => format!("{own}&{options}"),
            None => options.to_string(),
        };
        inner.set_query(Some(&query));
        let url = TargetUrl { inner, more_hosts: self.more_hosts.clone() };
        check_options_once(&url.inner, || url.redacted())?;
        Ok(url)
    }

    /// Every contact point as (host, port): the first one's and those after commas.
    pub fn hosts(&self) -> Vec<(String, Option<u16>)> {
        let first = self.host().map(|h| (h.to_string(), self.port()));
        let more = self.more_hosts.iter().filter_map(|h| {
            let alone = url::Url::parse(&format!("{}://{h}", self.inner.scheme())).ok()?;
            Some((alone.host_str()?.to_string(), alone.port()))
        });
        first.into_iter().chain(more).collect()
    }

    /// Whether the URL lists more than one contact point.
    pub fn has_several_hosts(&self) -> bool {
        !self.more_hosts.is_empty()
    }

    /// `url` as text with the contact points after the first put back after its port.
    fn with_more_hosts(&self, url: &url::Url) -> String {
        let at = &url[..url::Position::AfterPort];
        let more: String = self.more_hosts.iter().map(|h| format!(",{h}")).collect();
        format!("{at}{more}{}", &url[url::Position::AfterPort..])
    }

    pub fn scheme(&self) -> &str {
        self.inner.scheme()
    }

    pub fn host(&self) -> Option<&str> {
        self.inner.host_str()
    }

    pub fn port(&self) -> Option<u16> {
        self.inner.port()
    }

    /// The user name, if any (percent-decoded).
    pub fn username(&self) -> Option<String> {
        let user = self.inner.username();
        (!user.is_empty()).then(|| decode(user))
    }

    /// The password from the URL (its userinfo, else a password query parameter), if any.
    /// Never log or save this.
    pub fn password(&self) -> Option<String> {
        self.inner
            .password()
            .map(decode)
            .or_else(|| self.inner.query_pairs().find(|(k, _)| is_password_param(k)).map(|(_, v)| v.into_owned()))
            .filter(|p| !p.is_empty())
    }

    /// The password from the URL, else from the environment variable `var` (the system's
    /// own: `PGPASSWORD`, `MYSQL_PWD`, `REDISCLI_AUTH`), if any. Never log or save this.
    pub fn password_or_env(&self, var: &str) -> Option<String> {
        self.password().or_else(|| std::env::var(var).ok().filter(|p| !p.is_empty()))
    }

    /// The path without its leading slash for network URLs (a database name or index).
    pub fn database(&self) -> Option<String> {
        let path = self.inner.path().trim_start_matches('/');
        (!path.is_empty()).then(|| decode(path))
    }

    /// For embedded engines: the file path, or `None` for a throwaway file.
    pub fn file_path(&self) -> Option<PathBuf> {
        let path = self.inner.path();
        (!path.is_empty()).then(|| PathBuf::from(decode(path)))
    }

    /// Query parameters (`?layout=hstore&batch_mode=pipeline`), password parameters left
    /// out (see `password`).
    pub fn params(&self) -> BTreeMap<String, String> {
        self.inner.query_pairs().filter(|(k, _)| !is_password_param(k)).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
    }

    pub fn param(&self, key: &str) -> Option<String> {
        if is_password_param(key) {
            return None;
        }
        self.inner.query_pairs().find(|(k, _)| k == key).map(|(_, v)| v.into_owned())
    }

    /// The URL with every password (userinfo, password parameters) replaced by `***`; the
    /// only form that may be shown.
    pub fn redacted(&self) -> String {
        let mut shown = self.inner.clone();
        if shown.password().is_some() {
            let _ = shown.set_password(Some("***"));
        }
        if shown.query_pairs().any(|(k, _)| is_password_param(&k)) {
            let pairs: Vec<(String, String)> = shown
                .query_pairs()
                .map(|(k, v)| {
                    let v = if is_password_param(&k) { "***".to_string() } else { v.into_owned() };
                    (k.into_owned(), v)
                })
                .collect();
            shown.query_pairs_mut().clear().extend_pairs(pairs);
        }
        self.with_more_hosts(&shown)
    }

    /// The URL without any password (userinfo password and password parameters removed),
    /// e.g. to hand to a driver that takes the password separately.
    pub fn without_password(&self) -> TargetUrl {
        let mut bare = self.inner.clone();
        let _ = bare.set_password(None);
        let pairs: Vec<(String, String)> =
            bare.query_pairs().filter(|(k, _)| !is_password_param(k)).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        if pairs.is_empty() {
            bare.set_query(None);
        } else {
            bare.query_pairs_mut().clear().extend_pairs(pairs);
        }
        TargetUrl { inner: bare, more_hosts: self.more_hosts.clone() }
    }
}

/// Refuses a URL that gives a query option twice (`shown`: the URL as an error may show it).
fn check_options_once(url: &url::Url, shown: impl Fn() -> String) -> Result<()> {
    let mut seen: Vec<String> = Vec::new();
    for (key, _) in url.query_pairs() {
        // The password's spellings are one option: `password=a&pass=b` gives it twice.
        let key = if is_password_param(&key) { "password".to_string() } else { key.into_owned() };
        if seen.contains(&key) {
            return Err(Error::usage(format!("target URL '{}': option '{key}' is given twice; give each URL option once", shown())));
        }
        seen.push(key);
    }
    Ok(())
}

/// `scheme://[user@]h1:p1,h2:p2/rest` → (`scheme://[user@]h1:p1/rest`, [`h2:p2`]); any
/// other text unchanged with no further hosts.
fn split_hosts(text: &str) -> (String, Vec<String>) {
    let Some(scheme_end) = text.find("://") else { return (text.to_string(), Vec::new()) };
    let start = scheme_end + 3;
    let end = text[start..].find(['/', '?', '#']).map_or(text.len(), |i| start + i);
    let authority = &text[start..end];
    let hosts_start = authority.rfind('@').map_or(0, |i| i + 1);
    let mut hosts = authority[hosts_start..].split(',');
    let first = hosts.next().unwrap_or_default();
    let more: Vec<String> = hosts.map(str::to_string).collect();
    if more.is_empty() {
        return (text.to_string(), more);
    }
    (format!("{}{}{first}{}", &text[..start], &authority[..hosts_start], &text[end..]), more)
}

impl fmt::Debug for TargetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TargetUrl({})", self.redacted())
    }
}

impl fmt::Display for TargetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

fn decode(s: &str) -> String {
    // Percent-decoding by hand would be another copy of what `url` does; its form_urlencoded
    // decoder also turns '+' into ' ', which userinfo must not, so protect '+' first.
    let protected = s.replace('+', "%2B");
    url::form_urlencoded::parse(format!("x={protected}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// Best-effort removal of passwords from text that may hold a URL but is not one (a
/// command-line argument such as `name=postgres://u:pw@h/db?password=pw`, a URL that
/// failed to parse): the userinfo password and every password parameter become `***`.
pub fn redact_text(text: &str) -> String {
    let text = match (text.find("://"), text.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let userinfo = &text[scheme_end + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!("{}{}:***{}", &text[..scheme_end + 3], &userinfo[..colon], &text[at..]),
                None => text.to_string(),
            }
        }
        _ => text.to_string(),
    };
    redact_password_params(&text)
}

/// `…?password=x&a=b` → `…?password=***&a=b`, for every password parameter: any
/// `key=value` after a `?` or `&` anywhere in the text, so that a query the userinfo's
/// redaction took in (`h:1?a=@&password=x`) keeps its password hidden too.
fn redact_password_params(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut after_delimiter = false;
    loop {
        let end = rest.find(['?', '&']).unwrap_or(rest.len());
        let part = &rest[..end];
        match part.split_once('=') {
            Some((key, _)) if after_delimiter && is_password_param(&decode(key)) => {
                out.push_str(key);
                out.push_str("=***");
            }
            _ => out.push_str(part),
        }
        if end == rest.len() {
            return out;
        }
        out.push_str(&rest[end..=end]);
        rest = &rest[end + 1..];
        after_delimiter = true;
    }
}

/// The text of a client's password file, unless its permission bits include any of
/// `forbidden` (the clients of PostgreSQL and MariaDB ignore such a file; so does dbsweep,
/// with a warning that the file is `too_open`).
pub fn read_password_file(path: &Path, forbidden: u32, too_open: &str) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & forbidden != 0 {
            tracing::warn!("ignoring {}: it is {too_open} (chmod 0600 it)", path.display());
            return None;
        }
    }
    let _ = (meta, forbidden, too_open);
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_join_a_url_after_its_own_and_each_still_once() {
        let url = TargetUrl::parse("cassandra://u:pw@h1:9042,h2:9042/ks").unwrap();
        let with = url.with_options("affected=plain").unwrap();
        assert_eq!(with.redacted(), "cassandra://u:***@h1:9042,h2:9042/ks?affected=plain");
        assert_eq!((with.param("affected").as_deref(), with.password().as_deref(), with.hosts().len()), (Some("plain"), Some("pw"), 2));
        let layout = TargetUrl::parse("postgres://h:9/db?layout=hstore").unwrap();
        assert_eq!(layout.with_options("a=b&c=d").unwrap().to_string(), "postgres://h:9/db?layout=hstore&a=b&c=d");
        let twice = layout.with_options("layout=row").unwrap_err();
        assert_eq!(twice.exit_code(), 2);
        assert!(twice.to_string().contains("option 'layout' is given twice"), "{twice}");
    }

    #[test]
    fn network_urls_expose_parts_but_never_the_password_in_display() {
        let url = TargetUrl::parse("postgres://bench:s3cr%40t@127.0.0.1:5433/dbsweep?layout=hstore").unwrap();
        assert_eq!(url.scheme(), "postgres");
        assert_eq!(url.host(), Some("127.0.0.1"));
        assert_eq!(url.port(), Some(5433));
        assert_eq!(url.username().as_deref(), Some("bench"));
        assert_eq!(url.password().as_deref(), Some("s3cr@t"));
        assert_eq!(url.database().as_deref(), Some("dbsweep"));
        assert_eq!(url.param("layout").as_deref(), Some("hstore"));
        let shown = format!("{url} {url:?}");
        assert!(!shown.contains("s3cr"), "{shown}");
        assert!(shown.contains("***"));
    }

    #[test]
    fn password_parameters_log_in_but_never_show() {
        for key in ["password", "pass", "passwd", "pwd", "auth", "PASSWORD"] {
            let url = TargetUrl::parse(&format!("redis://127.0.0.1:6379/0?batch=pipeline&{key}=Can%26ary&x=1")).unwrap();
            assert_eq!(url.password().as_deref(), Some("Can&ary"), "{key}");
            assert_eq!(url.param(key), None);
            assert!(!url.params().contains_key(key), "{key}");
            assert_eq!(url.param("batch").as_deref(), Some("pipeline"));
            let shown = format!("{url} {url:?} {}", url.without_password());
            assert!(!shown.contains("Can"), "{shown}");
            assert!(url.redacted().contains(&format!("{key}=***")), "{}", url.redacted());
            assert_eq!(url.without_password().to_string(), "redis://127.0.0.1:6379/0?batch=pipeline&x=1");
        }
        // The userinfo wins over a parameter; an empty password is none.
        let url = TargetUrl::parse("postgres://u:first@h/db?password=second").unwrap();
        assert_eq!(url.password().as_deref(), Some("first"));
        assert_eq!(TargetUrl::parse("postgres://u@h/db?password=").unwrap().password(), None);
    }

    #[test]
    fn a_query_taken_for_userinfo_keeps_its_password_hidden() {
        // Found by the fuzzer: the port's '?' before an '@' made the query look like userinfo.
        let shown = redact_text("nodb://127.0.0.1:65536?fail_every=@&password=canary-pw");
        assert!(!shown.contains("canary-pw"), "{shown}");
        assert_eq!(redact_text("pg://h/db?a=1&pass=x&b=2"), "pg://h/db?a=1&pass=***&b=2");
        // ... and a '#' that made the rest a fragment.
        let e = TargetUrl::parse("nodb://[::1]?layout=#&password=canary-pw").err().unwrap().to_string();
        assert!(e.contains("'#' starts a fragment") && !e.contains("canary-pw"), "{e}");
    }

    #[test]
    fn redact_text_masks_userinfo_and_password_parameters() {
        let text = redact_text("pg=postgres://u:Canary1@h/db?layout=row&password=Canary2&pass=Canary3");
        assert_eq!(text, "pg=postgres://u:***@h/db?layout=row&password=***&pass=***");
        assert_eq!(redact_text("--quick"), "--quick");
        assert_eq!(redact_text("a?b=c"), "a?b=c");
    }

    #[test]
    fn several_contact_points_are_kept_and_shown_in_place() {
        let url = TargetUrl::parse("cassandra://u:Canary@127.0.0.2:9042,127.0.0.3:9043,h4/ks?replication_factor=2").unwrap();
        assert_eq!(url.hosts(), [("127.0.0.2".into(), Some(9042)), ("127.0.0.3".into(), Some(9043)), ("h4".into(), None)]);
        assert!(url.has_several_hosts());
        assert_eq!(url.database().as_deref(), Some("ks"));
        assert_eq!(url.param("replication_factor").as_deref(), Some("2"));
        assert_eq!(url.redacted(), "cassandra://u:***@127.0.0.2:9042,127.0.0.3:9043,h4/ks?replication_factor=2");
        assert_eq!(url.without_password().to_string(), "cassandra://u@127.0.0.2:9042,127.0.0.3:9043,h4/ks?replication_factor=2");
        let one = TargetUrl::parse("cassandra://127.0.0.1:9042").unwrap();
        assert_eq!((one.hosts(), one.has_several_hosts()), (vec![("127.0.0.1".into(), Some(9042))], false));
        for bad in ["cassandra://h1:9042,", "cassandra://h1:9042,h2:x", "cassandra://h1:1,h2:2:3"] {
            assert_eq!(TargetUrl::parse(bad).err().map(|e| e.exit_code()), Some(2), "{bad}");
        }
    }

    #[test]
    fn an_option_given_twice_is_refused_for_every_scheme() {
        for text in [
            "postgres://u@127.0.0.1:5432/db?layout=row&layout=jsonb",
            "redis://127.0.0.1:6379/0?batch_mode=pipeline&batch_mode=mget",
            "sqlite:/tmp/x.db?journal=wal&journal=delete",
            "mock:?fail_every=10&fail_every=3",
            "mysql://u:canary-pw@h:3306/db?password=canary-pw2&pass=canary-pw3",
        ] {
            let e = TargetUrl::parse(text).err().unwrap_or_else(|| panic!("{text} accepted"));
            assert_eq!(e.exit_code(), 2);
            let e = e.to_string();
            assert!(e.contains("is given twice; give each URL option once"), "{e}");
            assert!(!e.contains("canary-pw"), "{e}");
        }
        TargetUrl::parse("postgres://u@h:5432/db?layout=row&password=x").unwrap();
    }

    #[test]
    fn embedded_urls_and_bare_names() {
        assert_eq!(TargetUrl::parse("sqlite").unwrap().scheme(), "sqlite");
        assert_eq!(TargetUrl::parse("sqlite:").unwrap().file_path(), None);
        assert_eq!(TargetUrl::parse("sqlite:/tmp/a.db").unwrap().file_path(), Some(PathBuf::from("/tmp/a.db")));
        assert_eq!(TargetUrl::parse("duckdb:///tmp/b.duckdb").unwrap().file_path(), Some(PathBuf::from("/tmp/b.duckdb")));
    }

    #[test]
    fn malformed_urls_are_usage_errors_without_password() {
        for bad in ["postgres://u:pw@:5432/x", "redis://h:notaport", "://", ""] {
            let err = TargetUrl::parse(bad).err().unwrap_or_else(|| panic!("{bad} parsed"));
            assert_eq!(err.exit_code(), 2, "{bad}");
            assert!(!err.to_string().contains(":pw@"), "{err}");
        }
    }
}
