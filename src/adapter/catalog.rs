//! The golden page `docs/capabilities.md`: every system's URL schemes, URL options, what
//! it runs on and what its adapter can do, rendered from the registry's declarations and
//! compared with the committed page, so that a capability that appears or disappears is
//! seen in review. Test-only: must not connect to anything (adapters are opened, never
//! prepared).

use super::declaration::UrlOptions;
use super::registry::{self, Needs, SYSTEMS};
use super::{OpenContext, TargetInfo, TargetUrl};
use crate::base::op::OpKind;
use std::fmt::Write as _;
use std::path::Path;

/// The page, relative to the crate root.
const PAGE: &str = "docs/capabilities.md";

/// One line of `dbsweep targets`, with what its adapter says of itself.
struct Listed {
    url: &'static str,
    system: &'static str,
    needs: Needs,
    /// `None` for a system dbsweep has no adapter for.
    info: Option<TargetInfo>,
}

/// One URL scheme `open` accepts.
struct Scheme {
    scheme: String,
    /// The system its adapter reports.
    system: String,
    /// `None`: every option goes on to the driver.
    options: Option<Vec<&'static str>>,
    several_hosts: bool,
}

fn opened(url: &str, dir: &Path) -> Option<TargetInfo> {
    let url = TargetUrl::parse(url).ok()?;
    registry::open("catalog", &url, &OpenContext::new(dir)).ok().map(|target| target.info().clone())
}

fn listed(dir: &Path) -> Vec<Listed> {
    SYSTEMS
        .iter()
        .map(|entry| Listed {
            url: entry.url,
            system: entry.system,
            needs: entry.needs,
            info: entry.unavailable().is_none().then(|| opened(&entry.url.replace("[PATH]", ""), dir).expect(entry.system)),
        })
        .collect()
}

fn schemes(dir: &Path) -> Vec<Scheme> {
    let mut schemes: Vec<&str> = registry::schemes().collect();
    schemes.sort_unstable();
    schemes
        .into_iter()
        .map(|scheme| {
            let info = opened(&format!("{scheme}://127.0.0.1:1"), dir).or_else(|| opened(&format!("{scheme}:"), dir));
            let several = TargetUrl::parse(&format!("{scheme}://127.0.0.1:1,127.0.0.2:1")).unwrap();
            let several_hosts = registry::open("catalog", &several, &OpenContext::new(dir))
                .err()
                .is_none_or(|e| !e.to_string().contains("only cassandra:// URLs take several contact points"));
            Scheme {
                scheme: scheme.to_string(),
                system: info.map_or_else(|| "?".to_string(), |i| i.system),
                options: match SYSTEMS.iter().find(|s| s.schemes.contains(&scheme)).expect("a declared scheme").options {
                    UrlOptions::Only(options) => Some(options.to_vec()),
                    UrlOptions::Driver => None,
                },
                several_hosts,
            }
        })
        .collect()
}

fn needs_text(needs: Needs) -> String {
    match needs {
        Needs::BuiltIn => "built in".into(),
        Needs::Library => "library".into(),
        Needs::Server(kind) => format!("server (`--spawn {kind}`)"),
        Needs::Client(kind) => format!("client program, server (`--spawn {kind}`)"),
        Needs::Unavailable(_) => "cannot run here".into(),
    }
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "" }
}

/// The page as the code declares it now.
fn render(listed: &[Listed], schemes: &[Scheme]) -> String {
    let mut page = String::new();
    let _ = writeln!(page, "# Systems and their capabilities\n");
    let _ = writeln!(
        page,
        "Generated from the system declarations in `src/adapter/` by a test; do not edit by hand. After a\n\
         deliberate change, regenerate it with `UPDATE_GOLDEN=1 cargo test --lib adapter::catalog` and\n\
         review the diff. What each system is: `dbsweep targets` and [targets and systems](targets-and-systems.md).\n"
    );
    let _ = writeln!(page, "## Systems\n");
    let _ = writeln!(page, "| system | URL | runs on | runs its clients |");
    let _ = writeln!(page, "|---|---|---|---|");
    for l in listed {
        let execution = l.info.as_ref().map_or("", |i| i.execution.name());
        let _ = writeln!(page, "| {} | `{}` | {} | {} |", l.system, l.url, needs_text(l.needs), execution);
    }
    let _ = writeln!(page, "\n## Schemes\n");
    let _ = writeln!(page, "Every URL scheme dbsweep opens, the system it opens and the URL options it takes besides a");
    let _ = writeln!(page, "password (`password`, `pass`, `passwd`, `pwd`, `auth`); any other option is refused.\n");
    let _ = writeln!(page, "| scheme | system | URL options | several contact points |");
    let _ = writeln!(page, "|---|---|---|---|");
    for s in schemes {
        let options = match &s.options {
            None => "any (checked by its driver)".to_string(),
            Some(o) if o.is_empty() => "none".to_string(),
            Some(o) => o.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", "),
        };
        let _ = writeln!(page, "| `{}` | {} | {options} | {} |", s.scheme, s.system, yes(s.several_hosts));
    }
    let kinds = OpKind::ALL;
    let _ = writeln!(page, "\n## Capabilities\n");
    let _ = writeln!(page, "What each adapter declares before it connects (`x`: runs it; the runner reports any other op as");
    let _ = writeln!(page, "not supported; `mixed` is what report.json lists, never an op's own kind). A layout may narrow it");
    let _ = writeln!(page, "once the tables are known.\n");
    let header: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    let _ = writeln!(page, "| system | {} | queries | native batch | secondary indexes |", header.join(" | "));
    let _ = writeln!(page, "|---|{}---|---|---|", "---|".repeat(kinds.len()));
    for l in listed {
        let Some(info) = &l.info else { continue };
        let caps = &info.capabilities;
        let marks: Vec<&str> = kinds.iter().map(|k| if caps.supports_kind(*k) { "x" } else { "" }).collect();
        let queries: Vec<String> = caps.queries.iter().map(|q| format!("{q:?}")).collect();
        let _ = writeln!(
            page,
            "| {} | {} | {} | {} | {} |",
            l.system,
            marks.join(" | "),
            queries.join(", "),
            yes(caps.native_batch),
            yes(caps.secondary_indexes)
        );
    }
    page
}

#[test]
fn the_capabilities_page_matches_the_declarations() {
    // MonetDBe opens one database per process: the library's other unit tests wait.
    let _monetdb = super::embedded::monetdb::connection::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let actual = render(&listed(dir.path()), &schemes(dir.path()));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PAGE);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let line =
            expected.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{PAGE} is stale: it differs from what the declarations say at line {}:\n  page: {:?}\n  code: {:?}\n\
             If the change is deliberate, regenerate it with\n  UPDATE_GOLDEN=1 cargo test --lib adapter::catalog\nand review the diff.",
            line + 1,
            expected.lines().nth(line).unwrap_or("<end>"),
            actual.lines().nth(line).unwrap_or("<end>")
        );
    }
}
