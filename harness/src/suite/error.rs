//! Suite errors located at file, line and column, with a snippet of the offending line.

use super::*;

/// A position in a suite file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

/// An error in a suite, located in its file, with the offending line quoted.
#[derive(Debug, Clone)]
pub struct SuiteError {
    pub location: Option<Location>,
    pub file: PathBuf,
    pub message: String,
    snippet: Option<String>,
}

impl SuiteError {
    pub fn at(source: &SuiteSource, span: &marked_yaml::Span, message: impl Into<String>) -> Self {
        let location = span.start().map(|m| Location {
            file: source.path.clone(),
            line: m.line(),
            column: m.column(),
        });
        let snippet = location
            .as_ref()
            .and_then(|l| source.snippet(l.line, l.column));
        SuiteError {
            location,
            file: source.path.clone(),
            message: message.into(),
            snippet,
        }
    }

    /// A suite file that is not UTF-8, located at its first invalid byte.
    pub(super) fn not_utf8(path: &Path, bytes: Vec<u8>) -> Self {
        let valid = std::str::from_utf8(&bytes).map_or_else(|e| e.valid_up_to(), |s| s.len());
        let before = String::from_utf8_lossy(&bytes[..valid]).into_owned();
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        let source = SuiteSource {
            path: path.to_owned(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        };
        let byte = bytes
            .get(valid)
            .map_or_else(String::new, |b| format!("byte 0x{b:02x} "));
        SuiteError {
            location: Some(Location {
                file: path.to_owned(),
                line,
                column,
            }),
            file: path.to_owned(),
            message: format!(
                "the suite is not UTF-8 text: {byte}here is not valid UTF-8 (save the file as UTF-8)"
            ),
            snippet: source.snippet(line, column),
        }
    }

    pub(super) fn whole_file(path: &Path, message: impl Into<String>) -> Self {
        SuiteError {
            location: None,
            file: path.to_owned(),
            message: message.into(),
            snippet: None,
        }
    }
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(l) => write!(
                f,
                "{}:{}:{}: {}",
                l.file.display(),
                l.line,
                l.column,
                self.message
            )?,
            None => write!(f, "{}: {}", self.file.display(), self.message)?,
        }
        if let Some(s) = &self.snippet {
            write!(f, "\n{s}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SuiteError {}

/// The text of a suite file, kept for quoting lines in errors.
pub struct SuiteSource {
    pub path: PathBuf,
    pub text: String,
}

impl SuiteSource {
    pub(super) fn snippet(&self, line: usize, column: usize) -> Option<String> {
        let text = self.text.lines().nth(line.checked_sub(1)?)?;
        Some(format!(
            "{line:>5} | {text}\n      | {}^",
            " ".repeat(column.saturating_sub(1))
        ))
    }
}

/// "did you mean" suffix for an unknown name.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let all: Vec<&str> = candidates.into_iter().collect();
    match closest(name, all.iter().copied()) {
        Some(c) => format!("; did you mean `{c}`?"),
        None if all.is_empty() => String::new(),
        None => format!("; known: {}", all.join(", ")),
    }
}

/// The candidate most like `name` (Jaro-Winkler above 0.7), never `name` itself: suggesting
/// what the user wrote helps nobody.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(name, c);
        if c != name && score > 0.7 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// A YAML syntax error, located.
pub(super) fn load_error(source: &SuiteSource, e: marked_yaml::LoadError) -> SuiteError {
    use marked_yaml::LoadError as L;
    #[allow(deprecated)] // ScanError::description is yaml-rust's only access to the bare message
    let (marker, message) = match &e {
        L::TopLevelMustBeMapping(m) => (
            *m,
            "the top level must be a mapping of suite keys".to_string(),
        ),
        L::TopLevelMustBeSequence(m) => (*m, "the top level must be a sequence".to_string()),
        L::UnexpectedAnchor(m) => (
            *m,
            "YAML anchors and aliases are not supported in suites".to_string(),
        ),
        L::MappingKeyMustBeScalar(m) => (*m, "mapping keys must be plain strings".to_string()),
        L::UnexpectedTag(m) => (*m, "YAML tags are not supported in suites".to_string()),
        L::ScanError(m, err) => (*m, std::error::Error::description(err).to_string()),
        L::DuplicateKey(inner) => match inner.key.span().start() {
            Some(m) => (*m, format!("duplicate key `{}`", inner.key.as_str())),
            None => return SuiteError::whole_file(&source.path, format!("invalid YAML: {e}")),
        },
    };
    SuiteError::at(
        source,
        &marked_yaml::Span::new_start(marker),
        format!("invalid YAML: {message}"),
    )
}
