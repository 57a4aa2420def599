//! Where a text task's completion ends, as [`TextTaskInfo`](crate::TextTaskInfo) defines it:
//! the harness (a task's own vocabulary) and the SDK's `TextModel` (a model's tokenizer) both
//! cut with this one function, so the rule cannot drift between them.

/// `text` up to the first stop string it contains (the earliest match of any of `stop`; empty
/// stop strings are ignored), or all of it when it contains none.
pub fn cut_at_first_stop<'t, S: AsRef<str>>(text: &'t str, stop: &[S]) -> &'t str {
    let end = stop
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s))
        .min()
        .unwrap_or(text.len());
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stops(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn cuts_before_the_earliest_stop_string() {
        let stop = stops(&["Question:", "\n\n"]);
        assert_eq!(cut_at_first_stop("x = 1\n\nQuestion: y", &stop), "x = 1");
        assert_eq!(cut_at_first_stop("a Question: b\n\nc", &stop), "a ");
        assert_eq!(cut_at_first_stop("no stop", &stop), "no stop");
        assert_eq!(cut_at_first_stop("Question: first", &stop), "");
    }

    #[test]
    fn empty_stop_strings_cut_nothing() {
        assert_eq!(cut_at_first_stop("text", &stops(&[""])), "text");
        assert_eq!(cut_at_first_stop::<&str>("text", &[]), "text");
        // Borrowed stop strings (a plugin's constants) cut the same way.
        assert_eq!(cut_at_first_stop("a\n\nb", &["\n\n"]), "a");
    }
}
