//! One colour per system in every report: each target's colour comes from its name (or,
//! for a target named otherwise, its system) through a fixed map of the systems dbsweep
//! knows, and from a stable hash of the name into the palette for the rest; a clash with
//! another target of the same report moves to the next free colour. The NO-DB ceiling is
//! always grey. So sqlite is the same blue in every report and chart, whatever else ran.
//!
//! Owns colour choice only; must not draw.

use crate::report::model::Report;
use plotters::style::RGBColor;

/// Distinguishable on white, darkest first within a hue; the NO-DB grey is not among them.
const PALETTE: [RGBColor; 20] = [
    RGBColor(78, 121, 167),  // 0 blue
    RGBColor(242, 142, 43),  // 1 orange
    RGBColor(225, 87, 89),   // 2 red
    RGBColor(118, 183, 178), // 3 teal
    RGBColor(89, 161, 79),   // 4 green
    RGBColor(237, 201, 72),  // 5 yellow
    RGBColor(176, 122, 161), // 6 purple
    RGBColor(255, 157, 167), // 7 pink
    RGBColor(156, 117, 95),  // 8 brown
    RGBColor(27, 58, 107),   // 9 navy
    RGBColor(23, 190, 207),  // 10 cyan
    RGBColor(154, 154, 31),  // 11 olive
    RGBColor(107, 63, 160),  // 12 violet
    RGBColor(0, 109, 91),    // 13 dark teal
    RGBColor(160, 32, 42),   // 14 crimson
    RGBColor(227, 119, 194), // 15 magenta
    RGBColor(93, 64, 55),    // 16 dark brown
    RGBColor(143, 188, 63),  // 17 lime
    RGBColor(196, 156, 148), // 18 tan
    RGBColor(40, 40, 40),    // 19 near black
];

/// The NO-DB ceiling: a reference line, not a contender.
const NODB_GREY: RGBColor = RGBColor(127, 127, 127);

/// The systems (and spawned-server target names) dbsweep knows, each with its own palette
/// entry; systems that rarely run together may share one.
const KNOWN: &[(&str, usize)] = &[
    ("sqlite", 0),
    ("duckdb", 1),
    ("monetdb", 2),
    ("mariadb", 3),
    ("redb", 4),
    ("ledisdb", 5),
    ("hyper", 6),
    ("redis-cli", 7),
    ("memcached", 8),
    ("pg-row", 9),
    ("postgres", 9),
    ("pg-hstore", 10),
    ("h2", 11),
    ("pg-jsonb", 12),
    ("mariadb-cli", 13),
    ("redis", 14),
    ("cassandra", 15),
    ("aerospike", 16),
    ("mongodb", 17),
    ("mongod", 17),
    ("ssdb", 18),
    ("ferretdb", 19),
];

fn known(name: &str) -> Option<usize> {
    KNOWN.iter().find(|(n, _)| *n == name).map(|(_, i)| *i)
}

/// FNV-1a: the same number for the same name on every machine and in every version.
fn stable_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Targets in report order, each with its colour for every figure of the page.
pub(super) struct Colors(pub(super) Vec<(String, RGBColor)>);

impl Colors {
    pub(super) fn new(report: &Report) -> Colors {
        let mut targets: Vec<(String, String)> = report.targets.iter().map(|t| (t.name.clone(), t.system.clone())).collect();
        for p in &report.points {
            if !targets.iter().any(|(n, _)| *n == p.target) {
                targets.push((p.target.clone(), p.system.clone()));
            }
        }
        Colors::of_targets(&targets)
    }

    /// Colours for (target, system) pairs in this order.
    fn of_targets(targets: &[(String, String)]) -> Colors {
        // Who chooses first: targets named after a known system, then targets of a known
        // system, then the rest, each group by name; so a known name never yields its
        // colour to a hashed one, and the outcome does not depend on the report's order.
        let preference = |(name, system): &(String, String)| match (known(name), known(system)) {
            (Some(i), _) => (0, i),
            (None, Some(i)) => (1, i),
            (None, None) => (2, (stable_hash(name) % PALETTE.len() as u64) as usize),
        };
        let mut order: Vec<&(String, String)> = targets.iter().collect();
        order.sort_by_key(|t| (preference(t).0, t.0.clone()));
        let mut taken = [false; PALETTE.len()];
        let mut chosen: Vec<(String, RGBColor)> = Vec::new();
        let mut overflow = 0;
        for t in order {
            let color = if t.1 == "nodb" || t.0 == "nodb" {
                NODB_GREY
            } else {
                let first = preference(t).1;
                match (0..PALETTE.len()).map(|k| (first + k) % PALETTE.len()).find(|i| !taken[*i]) {
                    Some(i) => {
                        taken[i] = true;
                        PALETTE[i]
                    }
                    // More targets than colours: golden-angle hues, apart from each other.
                    None => {
                        overflow += 1;
                        hsl((overflow as f64 * 137.508) % 360.0, 0.55, 0.42)
                    }
                }
            };
            chosen.push((t.0.clone(), color));
        }
        Colors(
            targets.iter().map(|(name, _)| chosen.iter().find(|(n, _)| n == name).cloned().expect("every target got a colour")).collect(),
        )
    }

    pub(super) fn of(&self, target: &str) -> RGBColor {
        self.0.iter().find(|(n, _)| n == target).map(|(_, c)| *c).unwrap_or(RGBColor(0, 0, 0))
    }
}

fn hsl(h: f64, s: f64, l: f64) -> RGBColor {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = l - c / 2.0;
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let u = |v: f64| ((v + m) * 255.0).round() as u8;
    RGBColor(u(r), u(g), u(b))
}

/// `#rrggbb`.
pub(super) fn css(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn colors(targets: &[(&str, &str)]) -> Colors {
        Colors::of_targets(&targets.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect::<Vec<_>>())
    }

    #[test]
    fn a_system_keeps_its_colour_whatever_else_ran_and_in_whatever_order() {
        let two = colors(&[("nodb", "nodb"), ("sqlite", "sqlite"), ("duckdb", "duckdb")]);
        let many = colors(&[("redis", "redis"), ("duckdb", "duckdb"), ("pg-row", "pg-row"), ("sqlite", "sqlite"), ("nodb", "nodb")]);
        for name in ["sqlite", "duckdb", "nodb"] {
            assert_eq!(css(two.of(name)), css(many.of(name)), "{name}");
        }
        assert_eq!(css(two.of("sqlite")), "#4e79a7");
        assert_eq!(css(two.of("nodb")), "#7f7f7f");
        // A target named otherwise takes its system's colour when that is free.
        let renamed = colors(&[("a", "sqlite"), ("b", "duckdb")]);
        assert_eq!((css(renamed.of("a")), css(renamed.of("b"))), (css(two.of("sqlite")), css(two.of("duckdb"))));
        // An unknown name: the same colour in every report where nothing else claims it.
        let alone = colors(&[("my-store", "mock")]);
        let with_others = colors(&[("sqlite", "sqlite"), ("my-store", "mock"), ("nodb", "nodb")]);
        assert_eq!(css(alone.of("my-store")), css(with_others.of("my-store")));
        assert_eq!(stable_hash("sqlite"), 0xef60_e2dc_588e_a985, "FNV-1a never changes");
    }

    #[test]
    fn twelve_and_thirty_targets_get_distinct_colours_in_report_order() {
        for n in [12, 30] {
            let names: Vec<(String, String)> = (0..n).map(|i| (format!("t{i}"), "mock".to_string())).collect();
            let c = Colors::of_targets(&names);
            assert_eq!(c.0.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(), names.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>());
            let set: BTreeSet<String> = c.0.iter().map(|(_, c)| css(*c)).collect();
            assert_eq!(set.len(), n, "{n} targets");
        }
        // Two targets of one system do not share its colour.
        let same = colors(&[("wal", "sqlite"), ("off", "sqlite")]);
        assert_ne!(css(same.of("wal")), css(same.of("off")));
    }
}
