"""What tree-sitter's Python grammar parses but Python's compiler rejects, in the argument and
parameter lists around an insertion (a keyword repeated, a positional after a keyword or ``**``,
a parameter repeated or without a default after one with it, anything after ``**kwargs``) and a
``from __future__`` import below other code. Each is a SyntaxError, so the guard counts it as an
ERROR node (docs/decisions/syntax-guard.md); only the lists overlapping the insertion are read.
"""
from __future__ import annotations

_ARGUMENTS = "argument_list"
_PARAMETERS = ("parameters", "lambda_parameters")
_DEFAULTED = ("default_parameter", "typed_default_parameter")


def rule_breaks(root, lo: int, hi: int) -> list[tuple[str, int]]:
    """(what is wrong, the start byte of the item that breaks the rule) in each argument or
    parameter list under ``root`` that overlaps bytes [lo, hi]."""
    out: list[tuple[str, int]] = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.end_byte < lo or n.start_byte > hi:
            continue
        if n.type == _ARGUMENTS:
            out.extend(_argument_breaks(n))
        elif n.type in _PARAMETERS:
            out.extend(_parameter_breaks(n))
        elif n.type == "future_import_statement" and not _at_file_start(n):
            out.append(("from __future__ import not at the file's start", n.start_byte))
        stack.extend(n.children)
    return out


def _at_file_start(node) -> bool:
    """Whether a ``from __future__`` import follows only comments, the docstring and its kind."""
    if node.parent is None or node.parent.type != "module":
        return False
    before, docstring = node.prev_named_sibling, False
    while before is not None:                              # back to the file's start
        if before.type == "future_import_statement" and not docstring or \
                before.type == "comment":
            pass
        elif not docstring and before.type == "expression_statement" and \
                [c.type for c in before.named_children] == ["string"]:
            docstring = True
        else:
            return False
        before = before.prev_named_sibling
    return True


def _argument_breaks(node) -> list[tuple[str, int]]:
    seen, out, keyword, double = set(), [], False, False
    for item in node.named_children:
        kind = item.type
        if kind == "keyword_argument":
            name = _text(item.child_by_field_name("name"))
            if name in seen:
                out.append((f"keyword argument repeated: {name}", item.start_byte))
            seen.add(name)
            keyword = True
        elif kind == "dictionary_splat":
            keyword = double = True
        elif kind == "list_splat":
            if double:
                out.append(("* after **", item.start_byte))
        elif kind != "comment" and keyword:
            out.append(("positional argument after keyword argument", item.start_byte))
    return out


def _parameter_breaks(node) -> list[tuple[str, int]]:
    seen, out, defaulted, starred, double = set(), [], False, False, False
    for item in node.named_children:
        kind = _star_kind(item)
        name = _parameter_name(item)
        if name is not None:
            if name in seen:
                out.append((f"parameter repeated: {name}", item.start_byte))
            seen.add(name)
        if double and kind != "comment":
            out.append(("parameter after **", item.start_byte))
        if kind == "dictionary_splat_pattern":
            double = True
        elif kind in ("list_splat_pattern", "keyword_separator"):
            if starred:
                out.append(("* twice", item.start_byte))
            starred = True
        elif kind in _DEFAULTED:
            defaulted = True
        elif kind in ("identifier", "typed_parameter") and defaulted and not starred:
            out.append(("parameter without a default after one with it", item.start_byte))
    return out


def _star_kind(item) -> str:
    """The item's kind, a typed ``*args: int`` or ``**kw: int`` as its star's."""
    if item.type == "typed_parameter" and item.named_children and \
            item.named_children[0].type in ("list_splat_pattern", "dictionary_splat_pattern"):
        return item.named_children[0].type
    return item.type


def _parameter_name(item) -> str | None:
    kind = item.type
    if kind == "identifier":
        return _text(item)
    if kind in _DEFAULTED:
        return _text(item.child_by_field_name("name"))
    if kind in ("typed_parameter", "list_splat_pattern", "dictionary_splat_pattern"):
        first = item.named_children[0] if item.named_children else None
        return _parameter_name(first) if first is not None else None
    return None


def _text(node) -> str | None:
    return None if node is None else (node.text or b"").decode("utf-8", "replace")
