"""The Engine: documents -> prompts -> drafts -> decoded suggestions."""
