//! A request mix (`--mix FILE`, docs/MIX_FORMAT.md): endpoints drawn by
//! weight, each with its own request and its own idea of a good answer.
//!
//! The file is read and checked once, each mistake at its line with the
//! fix. It is then rendered once for a host: each endpoint's request
//! becomes fixed bytes (request line, Host, headers with
//! `X-Rackbench-Endpoint: NAME`, Content-Length, Connection as the run
//! says, body) with the path's placeholders as gaps, so per request the
//! loop only draws an endpoint and writes the drawn integers (or values)
//! between the fixed pieces into a buffer it keeps ([`Mix::write`]): no allocation,
//! no formatting of headers.
//!
//! The draw is deterministic: each load thread has two [`Draw`] streams
//! seeded from the mix's seed and the thread's lane, one for the
//! endpoints (in the order requests are issued) and one for the
//! placeholders (in the order they are written), and an endpoint is
//! found by a binary search of the cumulative weights.
//!
//! A mix never does I/O but read its own file, and never judges or
//! counts an answer (the loop and the recorder do, by its endpoints).
//!
//! This file holds the types every part shares and the draw by weight
//! ([`Mix::pick`]); `file.rs` reads and checks the file, `render.rs`
//! renders the requests and writes them, `draw.rs` is the generator.
//! It never reads the file nor renders a request itself.

mod draw;
mod file;
mod render;

pub use draw::Draw;
pub use file::MixError;

use crate::load::response::ExpectStatus;

/// The header every request of a mix carries, naming its endpoint (the
/// server-side telemetry groups by it).
pub const ENDPOINT_HEADER: &str = "X-Rackbench-Endpoint";

/// One endpoint of a mix, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct MixEndpoint {
    pub name: String,
    pub method: String,
    /// The path as the file wrote it, placeholders unexpanded.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub weight: f64,
    pub expect_status: ExpectStatus,
    /// Substring the body must contain; empty for no check.
    pub expect_body: Vec<u8>,
    /// The path cut at its placeholders.
    pieces: Vec<Piece>,
}

impl MixEndpoint {
    /// The request is HEAD: its answer carries no body.
    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    /// `{random:lo..hi}`: a uniform integer in lo..=hi.
    Random {
        lo: u64,
        hi: u64,
    },
    /// `{one_of:a|b|c}`: one of the values, uniformly (ids that cannot
    /// be ranged: UUIDs, hex digests, slugs, dates).
    OneOf(Vec<String>),
}

/// One endpoint's request, rendered for a host: `fixed` with the drawn
/// integers written at `gaps` (offsets into `fixed`, in order).
#[derive(Debug, Clone, PartialEq)]
struct Rendered {
    fixed: Vec<u8>,
    gaps: Vec<Gap>,
}

#[derive(Debug, Clone, PartialEq)]
struct Gap {
    at: usize,
    fill: Fill,
}

/// What a gap is filled with.
#[derive(Debug, Clone, PartialEq)]
enum Fill {
    Random {
        lo: u64,
        /// hi - lo + 1, or 0 for the whole u64 range.
        span: u64,
    },
    /// One of these bytes, uniformly.
    OneOf(Vec<Vec<u8>>),
}

/// A checked mix; [`Mix::render`] makes the requests for a host.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    /// The file it came from, as given (for the equivalent command).
    pub file: String,
    /// The file's `seed`; None when it has none.
    pub file_seed: Option<u64>,
    /// The seed of the draw: the file's, else the run's, else 1.
    pub seed: u64,
    pub endpoints: Vec<MixEndpoint>,
    /// Cumulative weights, one per endpoint.
    cumulative: Vec<f64>,
    /// Empty until rendered.
    rendered: Vec<Rendered>,
}

impl Mix {
    /// The draw's seed: the file's if it has one, else `run_seed`.
    pub fn with_run_seed(mut self, run_seed: u64) -> Mix {
        self.seed = self.file_seed.unwrap_or(run_seed);
        self
    }
    /// Draws an endpoint by weight.
    #[inline]
    pub fn pick(&self, draw: &mut Draw) -> u32 {
        let total = *self.cumulative.last().expect("a mix has an endpoint");
        let u = draw.unit() * total;
        // The first endpoint whose cumulative weight is above u: a zero
        // weight (equal to its predecessor's) is never it.
        let i = self.cumulative.partition_point(|&c| c <= u);
        i.min(self.endpoints.len() - 1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::target::Url;

    /// The blog's mix, the fixture of every part's tests.
    pub(super) const BLOG: &str = r#"# The blog's mix.
seed = 7

[[endpoint]]
name = "index"
path = "/posts?page={random:1..10}"
weight = 50
expect = { status = 200, body = "Posts" }

[[endpoint]]
name = "comment"
method = "post"
path = "/posts/{random:1..1000}/comments"
headers = { Accept = "text/html" }
body = "comment[body]=hi"
weight = 5
expect = { status = [200, 302] }

[[endpoint]]
name = "never"
path = "/never"
weight = 0
"#;

    pub(super) fn url() -> Url {
        Url::parse("http://127.0.0.1:8080/").unwrap()
    }

    #[test]
    fn the_draw_follows_the_weights_and_a_seed_repeats_it() {
        let m = Mix::parse(BLOG, "blog.toml").unwrap();
        let draws = |seed: u64, lane: u64| -> Vec<u32> {
            let mut d = Draw::new(seed, lane, 0);
            (0..55_000).map(|_| m.pick(&mut d)).collect()
        };
        let a = draws(7, 0);
        assert_eq!(a, draws(7, 0), "the same seed and lane draw the same");
        assert_ne!(a, draws(7, 1), "lanes draw apart");
        assert_ne!(a, draws(8, 0), "seeds draw apart");
        let count = |e: u32| a.iter().filter(|&&x| x == e).count() as f64;
        // 50 : 5 : 0 over 55,000 draws: 50,000 and 5,000 expected, sd
        // about 68; 5 sd either side.
        assert!((count(0) - 50_000.0).abs() < 350.0, "{}", count(0));
        assert!((count(1) - 5_000.0).abs() < 350.0, "{}", count(1));
        assert_eq!(count(2), 0.0, "weight 0 is never drawn");
    }
}
