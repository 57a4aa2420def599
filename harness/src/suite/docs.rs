//! What a suite says about where its cells find things: the documents a text task's cells
//! score (`doc_ids:`, `docs_from_replay:`) and the folder relative paths are relative to.

use super::*;

/// A task entry's `doc_ids:` or `docs_from_replay: true`, checked.
pub(super) fn selection(
    t: &RawTask,
    source: &SuiteSource,
) -> Result<Option<DocSelection>, SuiteError> {
    Ok(match (&t.doc_ids, &t.docs_from_replay) {
        (Some(_), Some(from)) if **from => {
            return Err(SuiteError::at(
                source,
                from.span(),
                "give `doc_ids` or `docs_from_replay: true`, not both",
            ));
        }
        (Some(ids), _) if ids.is_empty() => {
            return Err(SuiteError::at(
                source,
                t.name.span(),
                format!(
                    "task `{}`: `doc_ids` is empty; list the prompt ids to score, e.g. \
                     `doc_ids: [HumanEval/3, HumanEval/17]`, or leave it out to score every \
                     document",
                    *t.name
                ),
            ));
        }
        (Some(ids), _) => Some(DocSelection::Ids(
            ids.iter().map(|id| id.trim().to_string()).collect(),
        )),
        (None, Some(from)) if **from => Some(DocSelection::FromReplay),
        (None, _) => None,
    })
}

/// The folder relative paths in the suite mean: the suite file's, made absolute so a worker
/// reads the same file whatever its working directory.
pub(super) fn base_dir(suite_dir: &Path) -> PathBuf {
    let dir = if suite_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        suite_dir
    };
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned())
}
