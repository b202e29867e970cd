"""Extract a Python file's definitions (FileSymbols) from its tree-sitter tree: statements are
walked to a bounded depth, expressions left to tree-sitter queries (in C). Never raises.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from tree_sitter import Query, QueryCursor

from inkling.analysis.symbols import ClassSymbol, FileSymbols, FunctionSymbol, ImportBinding

MAX_DEPTH = 48                      # nested compound statements / classes followed
CLASS_CACHE = 2048                  # top-level classes kept for reuse across extractions
STATEMENT_CACHE_BYTES = 8 << 20     # top-level statements' captured names kept (their texts)
_COMPOUND = {"if_statement", "try_statement", "with_statement", "for_statement",
             "while_statement", "match_statement", "elif_clause", "else_clause",
             "except_clause", "except_group_clause", "finally_clause", "case_clause", "block"}
_TARGETS = {"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list",
            "parenthesized_expression", "list_splat_pattern", "as_pattern_target"}
_HARMLESS_METACLASSES = {"ABCMeta", "abc.ABCMeta", "type", "EnumMeta", "enum.EnumMeta",
                         "EnumType", "enum.EnumType"}
_DYNAMIC_MODULE_MARKS = (b"globals().update", b"globals()[", b"_convert_(", b"vars().update")
_DYNAMIC_CLASS = re.compile(rb"setattr\(\s*(?:self|cls)\b|(?:self|cls)\.__dict__\.update\("
                            rb"|(?:self|cls)\.__dict__\[[^\]]*\]\s*=(?!=)|vars\(self\)\.update")
_GLOBAL_ENUM = {"global_enum", "enum.global_enum", "_simple_enum", "enum._simple_enum"}

SELF_ATTRIBUTE_QUERY = """
(assignment left: (attribute object: (identifier) @obj attribute: (identifier) @attr))
(augmented_assignment left: (attribute object: (identifier) @obj attribute: (identifier) @attr))
(pattern_list (attribute object: (identifier) @obj attribute: (identifier) @attr))
(tuple_pattern (attribute object: (identifier) @obj attribute: (identifier) @attr))
(for_statement left: (attribute object: (identifier) @obj attribute: (identifier) @attr))
(as_pattern_target (attribute object: (identifier) @obj attribute: (identifier) @attr))
"""

BINDING_QUERY = """
(function_definition name: (identifier) @b)
(class_definition name: (identifier) @b)
(parameters (identifier) @b)
(lambda_parameters (identifier) @b)
(default_parameter name: (identifier) @b)
(typed_parameter (identifier) @b)
(typed_default_parameter name: (identifier) @b)
(list_splat_pattern (identifier) @b)
(dictionary_splat_pattern (identifier) @b)
(assignment left: (identifier) @b)
(augmented_assignment left: (identifier) @b)
(pattern_list (identifier) @b)
(tuple_pattern (identifier) @b)
(list_pattern (identifier) @b)
(for_statement left: (identifier) @b)
(for_in_clause left: (identifier) @b)
(as_pattern_target (identifier) @b)
(as_pattern_target (tuple (identifier) @b))
(as_pattern (identifier) @b .)
(named_expression name: (identifier) @b)
(global_statement (identifier) @b)
(nonlocal_statement (identifier) @b)
(aliased_import alias: (identifier) @b)
(import_statement name: (dotted_name . (identifier) @b))
(import_from_statement name: (dotted_name . (identifier) @b))
(case_pattern (dotted_name . (identifier) @b))
(splat_pattern (identifier) @b)
(keyword_pattern (dotted_name (identifier) @b))
"""

GLOBAL_QUERY = "(global_statement (identifier) @g)"


def node_text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def dotted(node) -> str:
    """``a.b.c`` for identifier/attribute/dotted_name nodes, else ''."""
    parts = []
    while node is not None and node.type == "attribute":
        attr = node.child_by_field_name("attribute")
        parts.append(node_text(attr))
        node = node.child_by_field_name("object")
    if node is None:
        return ""
    if node.type == "identifier":
        parts.append(node_text(node))
    elif node.type == "dotted_name":
        parts.append(node_text(node).replace(" ", ""))
    else:
        return ""
    return ".".join(reversed(parts))


def target_names(node) -> list[str]:
    """Plain names bound by an assignment target (not attributes or subscripts)."""
    out, stack = [], [(node, 0)]
    while stack:
        n, depth = stack.pop()
        if n is None or depth > MAX_DEPTH:
            continue
        if n.type == "identifier":
            out.append(node_text(n))
        elif n.type in _TARGETS:
            stack.extend((c, depth + 1) for c in n.named_children)
    return out


def statements(block, depth: int = 0):
    """Statements of a block, descending into compound statements (not defs or classes)."""
    stack = [(c, depth) for c in reversed(block.named_children)] if block is not None else []
    while stack:
        node, d = stack.pop()
        if node.type in _COMPOUND:
            if d < MAX_DEPTH:
                stack.extend((c, d + 1) for c in reversed(node.named_children))
            if node.type not in ("block",):
                yield node, d           # compound headers bind names too (for, with, except)
            continue
        yield node, d


def header_names(node) -> list[str]:
    """Names a compound statement's header binds (for targets, with/except ``as``)."""
    if node.type == "for_statement":
        return target_names(node.child_by_field_name("left"))
    out = []
    if node.type in ("with_statement", "except_clause", "except_group_clause"):
        for child in node.named_children:
            if child.type == "block":
                continue
            stack = [child]
            while stack:
                n = stack.pop()
                if n.type == "as_pattern_target":
                    out.extend(target_names(n))
                elif n.type not in ("block",):
                    stack.extend(n.named_children)
    return out


def function_symbol(node, decorators: tuple[str, ...] = ()) -> FunctionSymbol:
    params, kwonly = [], []
    posonly, var_pos, var_kw, star = 0, "", "", False
    plist = node.child_by_field_name("parameters")
    for p in plist.named_children if plist is not None else []:
        name = _param_name(p)
        if p.type == "positional_separator":
            posonly = len(params)
        elif p.type == "keyword_separator":
            star = True
        elif p.type == "list_splat_pattern":
            var_pos, star = name, True
        elif p.type == "dictionary_splat_pattern":
            var_kw = name
        elif name:
            params.append(name)
            if star:
                kwonly.append(name)
    return FunctionSymbol(node_text(node.child_by_field_name("name")), tuple(params), posonly,
                          tuple(kwonly), var_pos, var_kw, decorators, node.start_point[0])


def _param_name(p) -> str:
    if p.type == "identifier":
        return node_text(p)
    named = p.child_by_field_name("name")
    if named is not None:
        return node_text(named)
    for c in p.named_children:
        if c.type == "identifier":
            return node_text(c)
    return ""


def _decorators(node) -> tuple[str, ...]:
    parent = node.parent
    if parent is None or parent.type != "decorated_definition":
        return ()
    out = []
    for d in parent.named_children:
        if d.type == "decorator" and d.named_children:
            expr = d.named_children[0]
            if expr.type == "call":
                expr = expr.child_by_field_name("function")
            out.append(dotted(expr))
    return tuple(out)


def import_bindings(node) -> list[ImportBinding]:
    """The names an import statement binds (``*`` as a binding with local '*')."""
    if node.type == "import_statement":
        return [_plain_import(n) for n in node.children_by_field_name("name")]
    if node.type != "import_from_statement":
        return []
    module, level = _from_module(node.child_by_field_name("module_name"))
    out = []
    for child in node.named_children:
        if child.type == "wildcard_import":
            out.append(ImportBinding("*", module, "*", level))
    for n in node.children_by_field_name("name"):
        if n.type == "aliased_import":
            name = node_text(n.child_by_field_name("name"))
            out.append(ImportBinding(node_text(n.child_by_field_name("alias")), module, name,
                                     level))
        else:
            out.append(ImportBinding(node_text(n), module, node_text(n), level))
    return out


def _plain_import(n) -> ImportBinding:
    if n.type == "aliased_import":
        return ImportBinding(node_text(n.child_by_field_name("alias")),
                             node_text(n.child_by_field_name("name")))
    full = node_text(n)
    return ImportBinding(full.split(".")[0], full.split(".")[0])


def _from_module(node) -> tuple[str, int]:
    if node is None:
        return "", 0
    if node.type == "relative_import":
        level, module = 0, ""
        for c in node.named_children:
            if c.type == "import_prefix":
                level = node_text(c).count(".")
            elif c.type == "dotted_name":
                module = node_text(c)
        return module, level
    return node_text(node), 0


@dataclass
class _Namespace:
    """Collects one namespace's (module or class body) definitions while walking."""
    names: set = field(default_factory=set)
    functions: dict = field(default_factory=dict)
    classes: dict = field(default_factory=dict)
    imports: dict = field(default_factory=dict)
    alternatives: dict = field(default_factory=dict)
    stars: list = field(default_factory=list)
    exported: list | None = None
    dynamic: bool = False
    module_extra: set = field(default_factory=set)   # names a class adds to its module


class PythonSymbolExtractor:
    """Compiled queries for one tree-sitter Python language; ``extract`` is pure."""

    def __init__(self, language):
        self.language = language
        self._self_attrs = Query(language, SELF_ATTRIBUTE_QUERY)
        self._bindings = Query(language, BINDING_QUERY)
        self._globals = Query(language, GLOBAL_QUERY)
        self.identifier_query = Query(language, "(identifier) @id")
        self._classes: OrderedDict = OrderedDict()      # (text, decorators) -> symbol, extra
        self._statements: OrderedDict = OrderedDict()   # (query, text) -> names it captures
        self._statement_bytes = 0

    @property
    def binding_query(self):
        """The query whose captures are every binding occurrence of a name."""
        return self._bindings

    def extract(self, root, module: str, path: str = "", is_package: bool = False,
                all_names: bool = True) -> FileSymbols:
        """The file's symbols; ``all_names`` False skips every-bound-name collection. Top-level
        classes whose text is unchanged are reused."""
        ns = _Namespace()
        self._walk(root, ns, in_class=False, depth=0)
        ns.names |= self._module_captured("globals", self._globals, root)
        ns.names |= ns.module_extra
        bound = frozenset(self._module_captured("bindings", self._bindings, root)) \
            if all_names else frozenset()
        return FileSymbols(module, path, frozenset(ns.names), ns.functions, ns.classes,
                           ns.imports, tuple(ns.stars), bound | ns.names,
                           tuple(ns.exported) if ns.exported is not None else None,
                           ns.dynamic, is_package,
                           alternatives={k: tuple(v) for k, v in ns.alternatives.items()})

    def bound_names(self, node) -> set[str]:
        """Every name bound anywhere under ``node`` (any scope)."""
        if node.parent is None:                          # a whole file: statement by statement
            return self._module_captured("bindings", self._bindings, node)
        return self._captured(self._bindings, node)

    def _module_captured(self, name: str, query, root) -> set[str]:
        """``_captured(query, root)`` a top-level statement at a time, kept by text, so an edit
        queries the statements it changed (docs/decisions/keystroke-work.md)."""
        names: set[str] = set()
        for child in root.children:
            names |= self._per_statement(name, child,
                                         lambda c: frozenset(self._captured(query, c)))
        return names

    def _per_statement(self, name: str, statement, compute):
        """``compute(statement)`` kept by (``name``, text), LRU; a statement with an error is
        recomputed, since its tree may hang on more than its text."""
        if statement.has_error or statement.is_missing:
            return compute(statement)
        cache, key = self._statements, (name, statement.text)
        found = cache.get(key)
        if found is None:
            found = cache[key] = compute(statement)
            self._statement_bytes += len(key[1])
            while self._statement_bytes > STATEMENT_CACHE_BYTES and len(cache) > 1:
                (_, text), _ = cache.popitem(last=False)
                self._statement_bytes -= len(text)
        else:
            cache.move_to_end(key)
        return found

    def _captured(self, query, node, start: int | None = None, end: int | None = None
                  ) -> set[str]:
        cursor = QueryCursor(query)
        if start is not None:
            cursor.set_byte_range(start, end)
        return {node_text(n) for nodes in cursor.captures(node).values() for n in nodes}

    # ------------------------------------------------------------------ walking
    def _walk(self, block, ns: _Namespace, in_class: bool, depth: int) -> None:
        for node, _ in statements(block):
            kind = node.type
            if kind == "decorated_definition":
                node = node.child_by_field_name("definition")
                if node is None:
                    continue
                kind = node.type
            if kind == "function_definition":
                self._function(node, ns, in_class)
            elif kind == "class_definition":
                self._class(node, ns, depth)
            elif kind in ("import_statement", "import_from_statement"):
                self._import(node, ns)
            elif kind == "expression_statement":
                self._expression(node, ns, in_class)
            elif kind == "type_alias_statement":
                ns.names.update(target_names(node.named_children[0])
                                if node.named_children else [])
            else:
                ns.names.update(header_names(node))
            if not in_class and kind == "expression_statement" and \
                    any(m in node.text for m in _DYNAMIC_MODULE_MARKS):
                ns.dynamic = True

    def _function(self, node, ns: _Namespace, in_class: bool) -> None:
        f = function_symbol(node, _decorators(node))
        if f.name:
            ns.functions[f.name] = f
            ns.names.add(f.name)
            if f.name in ("__getattr__", "__getattribute__"):
                ns.dynamic = True

    def _import(self, node, ns: _Namespace) -> None:
        for b in import_bindings(node):
            if b.local == "*":
                ns.stars.append(b)
            elif b.local:
                if b.local in ns.imports and ns.imports[b.local] != b:
                    ns.alternatives.setdefault(b.local, [ns.imports[b.local]]).append(b)
                else:
                    ns.imports[b.local] = b
                ns.names.add(b.local)

    def _expression(self, node, ns: _Namespace, in_class: bool) -> None:
        for expr in node.named_children:
            while expr is not None and expr.type in ("assignment", "augmented_assignment"):
                left = expr.child_by_field_name("left")
                names = target_names(left)
                ns.names.update(names)
                right = expr.child_by_field_name("right")
                if names == ["__all__"]:
                    self._exported(expr, right, ns)
                if in_class and names == ["__slots__"] and right is not None:
                    ns.names.update(_string_literals(right))
                expr = right

    def _exported(self, expr, right, ns: _Namespace) -> None:
        values = _string_literals(right) if right is not None and \
            right.type in ("list", "tuple") else None
        if values is None:
            ns.exported = None
        elif expr.type == "augmented_assignment" and ns.exported is not None:
            ns.exported.extend(values)
        else:
            ns.exported = list(values)

    def _class(self, node, ns: _Namespace, depth: int) -> None:
        name = node_text(node.child_by_field_name("name"))
        if not name:
            return
        ns.names.add(name)
        if depth == 0:
            key = (node.text, _decorators(node))
            found = self._classes.get(key)
            if found is None:
                inner = _Namespace()
                self._class(node, inner, 1)
                found = self._classes[key] = (inner.classes[name], frozenset(inner.module_extra))
                while len(self._classes) > CLASS_CACHE:
                    self._classes.popitem(last=False)
            else:
                self._classes.move_to_end(key)
            symbol, extra = found
            ns.classes[name] = replace(symbol, line=node.start_point[0],
                                       end_line=node.end_point[0])
            ns.module_extra.update(extra)
            return
        if depth >= MAX_DEPTH:
            ns.classes[name] = ClassSymbol(name, (), frozenset(), dynamic=True)
            return
        body = node.child_by_field_name("body")
        inner = _Namespace()
        if body is not None:
            self._walk(body, inner, in_class=True, depth=depth + 1)
        bases, dynamic = _bases(node.child_by_field_name("superclasses"))
        members = set(inner.names) | self._self_members(inner.functions, body)
        decorators = _decorators(node)
        dynamic = dynamic or inner.dynamic or \
            (body is not None and _DYNAMIC_CLASS.search(body.text) is not None)
        ns.classes[name] = ClassSymbol(name, tuple(bases), frozenset(members), inner.functions,
                                       inner.classes, decorators, dynamic,
                                       node.start_point[0], node.end_point[0])
        if _GLOBAL_ENUM.intersection(decorators):
            ns.module_extra.update(inner.names)

    def _self_members(self, methods: dict, body) -> set[str]:
        """``self.x`` (or ``cls.x``) assigned in any method of the class body."""
        if body is None:
            return set()
        firsts = {f.params[0] for f in methods.values()
                  if f.params and "staticmethod" not in f.decorators}
        if not firsts:
            return set()
        out = set()
        for statement in body.children:          # an edit in one method queries that one
            for obj, attr in self._per_statement("self-attributes", statement,
                                                 self._attribute_targets):
                if obj in firsts:
                    out.add(attr)
        return out

    def _attribute_targets(self, node) -> tuple[tuple[str, str], ...]:
        """(object, attribute) of each ``obj.attr`` assigned under ``node``."""
        cursor = QueryCursor(self._self_attrs)
        cursor.set_byte_range(node.start_byte, node.end_byte)
        out = []
        for _, caps in cursor.matches(node):
            obj, attr = caps.get("obj"), caps.get("attr")
            if obj and attr:
                out.append((node_text(obj[0]), node_text(attr[0])))
        return tuple(out)


def _bases(arglist) -> tuple[list[str], bool]:
    """Base class names and whether the class is dynamic (unknown metaclass, ``*bases``)."""
    if arglist is None:
        return [], False
    bases, dynamic = [], False
    for arg in arglist.named_children:
        if arg.type == "keyword_argument":
            key = node_text(arg.child_by_field_name("name"))
            if key == "metaclass" and dotted(arg.child_by_field_name("value")) \
                    not in _HARMLESS_METACLASSES:
                dynamic = True
        elif arg.type in ("list_splat", "dictionary_splat"):
            dynamic = True
        elif arg.type == "subscript":
            bases.append(dotted(arg.child_by_field_name("value")))
        else:
            bases.append(dotted(arg))
    return bases, dynamic


def _string_literals(node) -> list[str]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type == "string_content":
            out.append(node_text(n))
        elif len(out) < 10_000:
            stack.extend(reversed(n.named_children))
    return out
