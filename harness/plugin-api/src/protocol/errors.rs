//! Error kinds, and how they cross a boundary that carries errors as strings. Since API 1.4.

use serde::{Deserialize, Serialize};

/// What kind of failure a plugin reports, so that a report can group failed cells by what the
/// user has to do: fix the suite, fix a data file, pick another component, or file a bug.
/// Since API 1.4; an error from an older plugin (or a panic) reads as [`ErrorKind::Internal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The configuration is wrong (a suite key, a sampler parameter, a model option): the user
    /// fixes the suite.
    BadConfig,
    /// An input file or a model output is malformed (a data file, a checkpoint, a replayed
    /// generation, an invalid distribution): the user fixes or replaces the data.
    BadData,
    /// The request is well-formed but this component cannot serve it (a sampler the model does
    /// not have, training a model that cannot be trained): the user picks another component.
    Unsupported,
    /// Anything else: a bug in the plugin or the harness, or an error the plugin did not
    /// classify.
    #[default]
    Internal,
}

impl ErrorKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [ErrorKind; 4] = [
        ErrorKind::BadConfig,
        ErrorKind::BadData,
        ErrorKind::Unsupported,
        ErrorKind::Internal,
    ];

    /// `bad_config`, `bad_data`, `unsupported` or `internal`, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::BadConfig => "bad_config",
            ErrorKind::BadData => "bad_data",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Internal => "internal",
        }
    }

    /// The kind called `name` (as [`ErrorKind::as_str`] writes it).
    pub fn parse(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// A phrase for reports, e.g. `bad configuration`.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::BadConfig => "bad configuration",
            ErrorKind::BadData => "bad data",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Internal => "internal error",
        }
    }
}

/// How an error's kind travels across the boundary, which carries errors as plain strings: the
/// message is prefixed with `[dlm-error:KIND] `. An older host shows the prefix as part of the
/// message; an older plugin's untagged message decodes as [`ErrorKind::Internal`].
const ERROR_TAG: &str = "[dlm-error:";

/// The wire form of an error of `kind` with `message` (see [`decode_error`]).
pub fn encode_error(kind: ErrorKind, message: &str) -> String {
    format!("{ERROR_TAG}{}] {message}", kind.as_str())
}

/// The kind and the message of an error string that crossed the boundary; an untagged string
/// (an older plugin, a panic, the glue's own errors) is [`ErrorKind::Internal`].
pub fn decode_error(wire: &str) -> (ErrorKind, &str) {
    if let Some(rest) = wire.strip_prefix(ERROR_TAG) {
        if let Some((name, message)) = rest.split_once("] ") {
            if let Some(kind) = ErrorKind::parse(name) {
                return (kind, message);
            }
        }
    }
    (ErrorKind::Internal, wire)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_kind_survives_the_wire_and_untagged_text_is_internal() {
        for kind in ErrorKind::ALL {
            let wire = encode_error(kind, "line 3: `tau` must be a number");
            assert_eq!(
                decode_error(&wire),
                (kind, "line 3: `tau` must be a number")
            );
        }
        assert_eq!(
            decode_error("plugin panicked in model.generate: boom"),
            (
                ErrorKind::Internal,
                "plugin panicked in model.generate: boom"
            )
        );
        // A tag with an unknown kind is not stripped: nothing is lost from the message.
        assert_eq!(
            decode_error("[dlm-error:frobnicated] x"),
            (ErrorKind::Internal, "[dlm-error:frobnicated] x")
        );
    }
}
