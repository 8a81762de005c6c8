//! Putting one study's generated section into the report file: only the text between the study's
//! begin and end markers is replaced, so hand-written text and other studies' sections stay as they are.
//!
//! Invariant: everything outside the markers comes out byte for byte as it went in; a file whose markers
//! are unbalanced (one without the other, twice, or end before begin) is refused rather than guessed at.

/// The begin and end markers of a study's section, e.g. `<!-- mobifs:begin -->`.
pub fn markers(study: &str) -> (String, String) {
    (format!("<!-- {study}:begin -->"), format!("<!-- {study}:end -->"))
}

/// What a new report file starts with.
const NEW_FILE_HEADER: &str = "# mcfs report\n\n\
Measured results of mcfs against the papers it builds on. Each study's section is written by \
`mcfs report` between its markers; text outside the markers is kept as it is.\n";

/// `doc` (the file's text, `None` if it does not exist yet) with the section of `study` set to `body`.
/// A section not yet in the file is appended at its end.
pub fn splice(doc: Option<&str>, study: &str, body: &str) -> Result<String, String> {
    let (begin, end) = markers(study);
    let section = format!("{begin}\n{}{end}", with_newline(body));
    let doc = doc.unwrap_or(NEW_FILE_HEADER);
    let (b, e) = (doc.matches(&begin).count(), doc.matches(&end).count());
    match (b, e) {
        (0, 0) => Ok(format!("{}\n{section}\n", with_newline(doc))),
        (1, 1) => {
            let start = doc.find(&begin).expect("counted once");
            let stop = doc.find(&end).expect("counted once");
            if stop < start {
                return Err(format!("'{end}' comes before '{begin}'"));
            }
            Ok(format!("{}{section}{}", &doc[..start], &doc[stop + end.len()..]))
        }
        _ => Err(format!("expected '{begin}' and '{end}' once each, found them {b} and {e} times")),
    }
}

fn with_newline(text: &str) -> String {
    if text.is_empty() || text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacing_a_section_keeps_everything_around_it() {
        let doc = "# Report\n\nintro by hand\n<!-- mobifs:begin -->\nold tables\n<!-- mobifs:end -->\n\
                   ## Discussion\nwritten by hand\n<!-- fasttrack:begin -->\nother\n<!-- fasttrack:end -->\ntail";
        let out = splice(Some(doc), "mobifs", "new tables\n").unwrap();
        assert_eq!(
            out,
            "# Report\n\nintro by hand\n<!-- mobifs:begin -->\nnew tables\n<!-- mobifs:end -->\n\
             ## Discussion\nwritten by hand\n<!-- fasttrack:begin -->\nother\n<!-- fasttrack:end -->\ntail"
        );
        assert_eq!(splice(Some(&out), "mobifs", "new tables").unwrap(), out, "idempotent");
        let fasttrack = splice(Some(&out), "fasttrack", "ft").unwrap();
        assert!(fasttrack.contains("<!-- fasttrack:begin -->\nft\n<!-- fasttrack:end -->\ntail"));
        assert!(fasttrack.contains("<!-- mobifs:begin -->\nnew tables\n"));
    }

    #[test]
    fn a_new_file_gets_a_header_and_a_missing_section_is_appended() {
        let new = splice(None, "mobifs", "tables").unwrap();
        assert!(new.starts_with("# mcfs report\n"), "{new}");
        assert!(new.ends_with("\n<!-- mobifs:begin -->\ntables\n<!-- mobifs:end -->\n"), "{new}");
        let appended = splice(Some("# Mine\nno newline"), "mobifs", "t").unwrap();
        assert_eq!(appended, "# Mine\nno newline\n\n<!-- mobifs:begin -->\nt\n<!-- mobifs:end -->\n");
    }

    #[test]
    fn unbalanced_markers_are_refused() {
        for doc in [
            "<!-- mobifs:begin -->\nno end",
            "no begin <!-- mobifs:end -->",
            "<!-- mobifs:end --> x <!-- mobifs:begin -->",
            "<!-- mobifs:begin --><!-- mobifs:end --><!-- mobifs:begin --><!-- mobifs:end -->",
        ] {
            assert!(splice(Some(doc), "mobifs", "t").is_err(), "{doc}");
        }
    }
}
