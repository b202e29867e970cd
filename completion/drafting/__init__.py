"""Drafting: the sources of draft tokens, the drafter that picks a tree, the meter sizing it."""
