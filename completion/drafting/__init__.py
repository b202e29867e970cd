"""Drafting: where the draft tokens a decoder verifies come from (suffix indexes over
the document, workspace, accepted completions, datastores), the drafter that picks a tree,
and the acceptance meter that sizes it."""
