//! Command and config templates: `{{name}}` is replaced by a value,
//! `{{?name text}}` by `text` (itself rendered) when `name` is set to
//! something other than "", "0" or "false".
//!
//! An unknown name is an error, never an empty string: a typo in a user's
//! server template must stop the trial before it starts, not launch a
//! server with half a command line.

use std::collections::BTreeMap;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TemplateError {
    #[error("unknown placeholder {{{{{name}}}}} in '{template}'; known: {known}")]
    Unknown {
        name: String,
        template: String,
        known: String,
    },
    #[error("unclosed '{{{{' in '{0}'")]
    Unclosed(String),
}

/// The values a template may use.
#[derive(Debug, Clone, Default)]
pub struct Vars(BTreeMap<String, String>);

impl Vars {
    pub fn set(&mut self, name: &str, value: impl ToString) -> &mut Self {
        self.0.insert(name.to_string(), value.to_string());
        self
    }
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
    fn truthy(&self, name: &str) -> Option<bool> {
        self.get(name).map(|v| !matches!(v, "" | "0" | "false"))
    }
}

pub fn render(template: &str, vars: &Vars) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = find_close(after).ok_or_else(|| TemplateError::Unclosed(template.to_string()))?;
        let inner = &after[..end];
        let unknown = |name: &str| TemplateError::Unknown {
            name: name.to_string(),
            template: template.to_string(),
            known: vars.names().collect::<Vec<_>>().join(", "),
        };
        if let Some(cond) = inner.strip_prefix('?').or_else(|| inner.strip_prefix('!')) {
            let want = inner.starts_with('?');
            let (name, text) = cond.split_once(' ').unwrap_or((cond, ""));
            if vars.truthy(name).ok_or_else(|| unknown(name))? == want {
                out.push_str(&render(text, vars)?);
            }
        } else {
            let name = inner.trim();
            out.push_str(vars.get(name).ok_or_else(|| unknown(name))?);
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Finds the `}}` that closes a placeholder, allowing nested ones inside
/// a conditional's text.
fn find_close(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let b = s.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if &b[i..i + 2] == b"{{" {
            depth += 1;
            i += 2;
        } else if &b[i..i + 2] == b"}}" {
            if depth == 0 {
                return Some(i);
            }
            depth -= 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        let mut v = Vars::default();
        v.set("port", 8080)
            .set("workers", 2)
            .set("preload", "true")
            .set("off", "false")
            .set("empty", "");
        v
    }

    #[test]
    fn renders_values_and_conditionals() {
        let cases: &[(&str, &str)] = &[
            ("-p {{port}}", "-p 8080"),
            ("-p {{ port }}", "-p 8080"),
            ("{{?preload --preload}}", "--preload"),
            ("{{?off --preload}}", ""),
            ("{{!off -a x}}{{!preload -b y}}", "-a x"),
            ("{{?empty -x}}", ""),
            ("{{?workers -w {{workers}}}} x", "-w 2 x"),
            ("no placeholders", "no placeholders"),
        ];
        for &(t, want) in cases {
            assert_eq!(render(t, &vars()).unwrap(), want, "{t}");
        }
    }

    #[test]
    fn unknown_and_unclosed_are_errors() {
        assert!(matches!(
            render("{{prot}}", &vars()),
            Err(TemplateError::Unknown { .. })
        ));
        assert!(matches!(
            render("{{?nope x}}", &vars()),
            Err(TemplateError::Unknown { .. })
        ));
        assert!(matches!(
            render("{{port", &vars()),
            Err(TemplateError::Unclosed(_))
        ));
        let msg = render("{{prot}}", &vars()).unwrap_err().to_string();
        assert!(msg.contains("{{prot}}") && msg.contains("port"), "{msg}");
    }
}
