//! The inner loops of the matrix: one server variant across apps, fronts
//! (direct, or nginx with each of its workers, keep-alive and HTTP
//! version) and load shapes (each connection count, each rate, the
//! replay; an app's own connection counts in place of the plan's). What
//! cannot work (several instances with nobody to balance them,
//! keep-alive over HTTP/1.0) is listed as a skip. It never looks at the
//! server or its variants (expand.rs does) and never renders nginx's
//! configuration (lab/front.rs does).

use super::naming::group_name;
use super::{Plan, PlannedTrial, Shape};
use crate::lab::front::{self, HttpVersion, Keepalive, DEFAULT_KEEPALIVE};

impl Plan {
    /// The load shapes: each connection count, each rate (at
    /// `rate_connections`), the replay; a break-point-only plan gets one
    /// placeholder so its searches have their server/app/topology groups
    /// (the runner does not run it as a fixed trial).
    pub(super) fn shapes(&self, has_replay: bool) -> Vec<Shape> {
        let mut shapes: Vec<Shape> = self
            .load
            .connections
            .iter()
            .map(|&c| Shape {
                connections: c,
                rate: None,
            })
            .collect();
        shapes.extend(self.load.rates.iter().map(|&r| Shape {
            connections: self.load.rate_connections,
            rate: Some(r),
        }));
        if has_replay {
            shapes.push(Shape {
                connections: self.load.rate_connections,
                rate: None,
            });
        }
        if shapes.is_empty() {
            let start = self.breakpoint.as_ref().map_or(1.0, |b| b.start);
            shapes.push(Shape {
                connections: start.max(1.0) as usize,
                rate: None,
            });
        }
        shapes
    }

    /// One server variant across apps, fronts (direct, or nginx with each
    /// of its knobs) and load shapes. Combinations that cannot work are
    /// listed in `skipped`: several instances with nobody to balance them,
    /// keep-alive over HTTP/1.0.
    pub(super) fn expand_fronts(
        &self,
        base: &PlannedTrial,
        shapes: &[Shape],
        combos: &mut Vec<PlannedTrial>,
        skipped: &mut Vec<String>,
    ) {
        for app in &self.apps {
            let shapes = self.shapes_of(app, shapes);
            for behind in &self.behind {
                let nginx = behind == "nginx";
                if !nginx && base.instances.is_some_and(|n| n > 1) {
                    skipped.push(format!(
                        "{} direct: several instances need nginx in front",
                        base.variant
                    ));
                    continue;
                }
                // (workers, keep-alive, HTTP version) of each front.
                let mut fronts = Vec::new();
                if nginx {
                    for &nw in &self.nginx_workers {
                        for &Keepalive(ka) in &self.nginx_keepalive {
                            for &http in &self.nginx_http {
                                match front::conflict(ka, http) {
                                    Some(why) => skipped.push(format!(
                                        "{} behind {}: {why}",
                                        base.variant,
                                        front::label(nw, ka, http)
                                    )),
                                    None => fronts.push((nw, ka, http)),
                                }
                            }
                        }
                    }
                } else {
                    fronts.push((0, DEFAULT_KEEPALIVE, HttpVersion::default()));
                }
                for &(nw, ka, http) in &fronts {
                    for shape in &shapes {
                        let mut t = base.clone();
                        t.group =
                            group_name(&base.variant, app, nginx.then_some((nw, ka, http)), shape);
                        t.app = app.clone();
                        t.behind = behind.clone();
                        t.nginx_workers = nw;
                        t.nginx_keepalive = ka;
                        t.nginx_http = http;
                        t.shape = *shape;
                        combos.push(t);
                    }
                }
            }
        }
    }

    /// The load shapes of one app: its own connection counts, if the plan
    /// gives it some, in place of the plan's; rates as for every app.
    fn shapes_of(&self, app: &str, shapes: &[Shape]) -> Vec<Shape> {
        let Some(conns) = self.load.app_connections.get(app) else {
            return shapes.to_vec();
        };
        let mut own: Vec<Shape> = conns
            .iter()
            .map(|&c| Shape {
                connections: c,
                rate: None,
            })
            .collect();
        own.extend(shapes.iter().filter(|s| s.rate.is_some()));
        own
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{all_installed, expand};
    use super::super::Plan;

    #[test]
    fn nginx_knobs_expand_and_impossible_fronts_are_skipped() {
        let text = r#"
name = "k"
apps = ["hello", "ip"]
behind = ["none", "nginx"]
nginx_keepalive = ["off", 16]
nginx_http = ["1.0", "1.1"]
[[server]]
name = "thin"
instances = [1, 3]
[load]
connections = [10]
"#;
        let e = Plan::parse(text, "k.toml")
            .unwrap()
            .expand(text, "k.toml", &all_installed())
            .unwrap();
        let fronts: Vec<(String, String)> = e
            .trials
            .iter()
            .filter(|t| t.app == "hello")
            .map(|t| (t.variant.clone(), t.front()))
            .collect();
        let want = [
            ("thin-x1", "direct"),
            ("thin-x1", "nginx×1 http/1.0 keepalive off"),
            ("thin-x1", "nginx×1 keepalive off"),
            ("thin-x1", "nginx×1 keepalive 16"),
            ("thin-x3", "nginx×1 http/1.0 keepalive off"),
            ("thin-x3", "nginx×1 keepalive off"),
            ("thin-x3", "nginx×1 keepalive 16"),
        ];
        assert_eq!(
            fronts,
            want.map(|(a, b)| (a.to_string(), b.to_string())),
            "{fronts:#?}"
        );
        let mut groups: Vec<&str> = e.trials.iter().map(|t| t.group.as_str()).collect();
        groups.dedup();
        assert_eq!(groups.len(), e.trials.len(), "group names must differ");
        let skipped = e.skipped.join("\n");
        assert!(
            skipped.contains("thin-x3 direct: several instances need nginx"),
            "{skipped}"
        );
        // Once each, though both apps meet them.
        assert_eq!(skipped.matches("several instances").count(), 1, "{skipped}");
        assert_eq!(skipped.matches("needs HTTP/1.1").count(), 2, "{skipped}");
        // Without the knobs, group names stay as they were.
        let plain = expand(
            "name = \"p\"\napps = [\"hello\"]\nservers = [\"puma\"]\nbehind = [\"nginx\"]\n[load]\nconnections = [5]\n",
        )
        .unwrap();
        if let Some(t) = plain.trials.first() {
            assert_eq!(t.group, "puma__hello__nginx1__c5");
            assert_eq!(t.front(), "nginx×1");
        }
    }
}
