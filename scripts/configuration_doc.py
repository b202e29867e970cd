"""Write what documents inkling's settings from the one options tree (completion/options.py:
each option's help line, group, values, bounds and whether it is advanced):

* docs/configuration.md, the whole reference;
* the server settings of the VS Code extension (editors/vscode/package.json,
  ``contributes.configuration``: one section a group, the advanced ones last; the
  extension's own settings are kept as they are written there, in the Editor section or,
  tagged "advanced", in the advanced one);
* the option list of the Neovim help (editors/nvim/doc/inkling.txt, its last section).

    python scripts/configuration_doc.py           # write the three
    python scripts/configuration_doc.py --check   # write nothing; exit 1 naming each that differs
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import textwrap
from pathlib import Path

from inkling.completion.options import GROUPS, InklingOptions

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "configuration.md"
MANIFEST = REPO / "editors" / "vscode" / "package.json"
NVIM_HELP = REPO / "editors" / "nvim" / "doc" / "inkling.txt"
KINDS = {bool: "boolean", int: "integer", float: "number", str: "string"}
BOUNDS = ("minimum", "maximum", "exclusiveMinimum")
EDITOR = "Editor"
ADVANCED = "Advanced (measurement and troubleshooting)"
HELP_HEADER = "8. SERVER OPTIONS"
HELP_END = " vim:"             # the help file's modeline: the generated section ends before it


@dataclasses.dataclass(frozen=True)
class Option:
    key: str            # the options tree's key as the editors spell it: "completion.maxNewTokens"
    kind: str           # the JSON schema type: boolean | integer | number | string
    default: object
    about: dict         # the field's metadata: help, group, advanced, values, other, bounds

    @property
    def help(self) -> str:
        return self.about["help"]

    @property
    def advanced(self) -> bool:
        return bool(self.about.get("advanced"))

    @property
    def values(self) -> dict[str, str]:
        return self.about.get("values", {})

    @property
    def enum(self) -> list[str]:
        """Every allowed value, when they are a closed set (else [])."""
        return list(self.values) if self.values and "other" not in self.about else []


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def options() -> list[Option]:
    """Every option of the tree, in the tree's order."""
    out = []
    for section in dataclasses.fields(InklingOptions):
        for f in dataclasses.fields(section.default_factory()):
            if "help" not in f.metadata:
                raise SystemExit(f"{section.name}.{f.name} has no help text "
                                 "in completion/options.py")
            out.append(Option(f"{section.name}.{camel(f.name)}", KINDS[type(f.default)],
                              f.default, dict(f.metadata)))
    return out


def grouped(opts: list[Option], advanced: bool) -> list[tuple[str, list[Option]]]:
    """(group title, its options) in GROUPS' order, the everyday or the advanced ones."""
    return [(title, [o for o in opts if o.about["group"] == group and o.advanced == advanced])
            for group, title in GROUPS.items()]


def values_line(o: Option) -> str:
    """``auto`` a CUDA GPU...; ``cpu`` the CPU; or ``cuda:N``: GPU N."""
    parts = [f"`{value}`: {text}" for value, text in o.values.items()]
    other = o.about.get("other")
    return "; ".join(parts) + (f"; or {other}" if other else "")


def description(o: Option) -> str:
    """The one line a setting shows: the help, and for an open set its named values."""
    return o.help if o.enum or not o.values else f"{o.help} {values_line(o)}."


def bounds_text(o: Option) -> str:
    low, high, above = (o.about.get(b) for b in BOUNDS)
    if low is not None and high is not None:
        return f"{low} to {high}"
    if above is not None:
        return f"above {above}"
    return f"at least {low}" if low is not None else (f"at most {high}" if high is not None else "")


# ------------------------------------------------------------------ VS Code
def vscode_property(o: Option, order: int) -> dict:
    prop: dict = {"type": o.kind, "default": o.default}
    if o.enum:
        prop["enum"] = o.enum
        prop["enumDescriptions"] = [o.values[v] for v in o.enum]
    prop.update({b: o.about[b] for b in BOUNDS if b in o.about})
    prop["order"] = order
    prop["markdownDescription"] = description(o)
    if o.advanced:
        prop["tags"] = ["advanced"]
    return prop


def client_properties(manifest: dict) -> dict[str, dict]:
    """The extension's own settings (not the server's options), as package.json has them."""
    tree = {f.name for f in dataclasses.fields(InklingOptions)}
    sections = manifest["contributes"]["configuration"]
    sections = sections if isinstance(sections, list) else [sections]
    return {key: prop for s in sections for key, prop in s["properties"].items()
            if key.split(".")[1] not in tree}


def vscode_configuration(manifest: dict) -> list[dict]:
    """``contributes.configuration``: the Editor section, one a group, the advanced last."""
    client = client_properties(manifest)
    everyday = [(EDITOR, [(k, p) for k, p in client.items()
                          if "advanced" not in p.get("tags", [])])]
    opts = options()
    for title, group in grouped(opts, advanced=False):
        everyday.append((title, [(f"inkling.{o.key}", o) for o in group]))
    advanced = [(f"inkling.{o.key}", o) for _, group in grouped(opts, True) for o in group]
    advanced += [(k, p) for k, p in client.items() if "advanced" in p.get("tags", [])]
    out = []
    for title, items in everyday + [(ADVANCED, advanced)]:
        if items:
            props = {key: vscode_property(item, i + 1) if isinstance(item, Option)
                     else {**item, "order": i + 1} for i, (key, item) in enumerate(items)}
            out.append({"title": title, "order": len(out) + 1, "properties": props})
    return out


def manifest_text(current: str) -> str:
    manifest = json.loads(current)
    manifest["contributes"]["configuration"] = vscode_configuration(manifest)
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


# ------------------------------------------------------------------ docs/configuration.md
DOC_HEAD = """# Configuration

<!-- Generated by scripts/configuration_doc.py from completion/options.py: edit the options
there and run the script again (a test fails when this file is out of date). -->

inkling's settings are one tree of options in sections (`model`, `completion`, `cache`,
`server`). Every way of running inkling reads the same tree:

- **VS Code**: the setting `inkling.<option>`, e.g. `"inkling.completion.drafts": 5`.
- **Neovim**: `require("inkling").setup({ init_options = { completion = { drafts = 5 } } })`,
  or `require("inkling").configure({...})` while it runs.
- **Any LSP client**: `initializationOptions` and `workspace/didChangeConfiguration`,
  `{"completion": {"drafts": 5}}`.
- **The command line**: `inkling replay ... --ablate completion.drafts=5` or
  `--compare completion.drafts=1,5`.

Keys are written in camelCase here; snake_case (`completion.max_new_tokens`) is accepted
too. Editors send only what you set, so everything else keeps the defaults below. A value
the server cannot take is named in an error message and the previous value is kept.

Each group lists the options people change first. Its **advanced** options are knobs for
measurement, research and troubleshooting: their defaults are what measured best on the
bundled model, and the evaluation tools (`inkling replay --compare`, `--ablate`) are the
way to find out whether another value is better for your model and your code.
"""


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def doc_table(opts: list[Option]) -> list[str]:
    rows = ["| Option | Type | Default | Values | Description |", "|---|---|---|---|---|"]
    for o in opts:
        allowed = ", ".join(f"`{v}`" for v in o.values) if o.values else bounds_text(o)
        allowed = "`true`, `false`" if o.kind == "boolean" else allowed
        if o.about.get("other"):
            allowed += f", or {o.about['other']}"
        rows.append(f"| `{o.key}` | {o.kind} | `{json.dumps(o.default)}` | {cell(allowed)} "
                    f"| {cell(o.help)} |")
    notes = [f"- `{o.key}`: {values_line(o)}." for o in opts if o.values]
    return rows + ([""] + notes if notes else [])


def editor_table(client: dict[str, dict]) -> list[str]:
    rows = ["| Setting | Type | Default | Description |", "|---|---|---|---|"]
    for key, prop in client.items():
        kind = prop["type"] if isinstance(prop["type"], str) else " or ".join(prop["type"])
        text = prop.get("markdownDescription") or prop["description"]
        if prop.get("enum"):
            text += " " + "; ".join(f"`{v}`: {d}" for v, d in
                                    zip(prop["enum"], prop["enumDescriptions"])) + "."
        tag = " (advanced)" if "advanced" in prop.get("tags", []) else ""
        rows.append(f"| `{key}`{tag} | {kind} | `{json.dumps(prop['default'])}` | {cell(text)} |")
    return rows


def doc_text(manifest: dict) -> str:
    lines = [DOC_HEAD]
    opts = options()
    for (title, everyday), (_, advanced) in zip(grouped(opts, False), grouped(opts, True)):
        lines += [f"## {title}", ""]
        lines += (doc_table(everyday) if everyday else ["Every option of this group is advanced."])
        if advanced:
            lines += ["", f"### {title}: advanced", "", "For measurement and research.", ""]
            lines += doc_table(advanced)
        lines.append("")
    lines += ["## Editor", "",
              "The VS Code extension's own settings (they are not sent to the server):", ""]
    lines += editor_table(client_properties(manifest))
    lines += ["", "The Neovim plugin's own options (`cmd`, `filetypes`, `keys`, ...) are in its "
              "help, `:help inkling-setup`.", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------ Neovim help
def lua(value) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


def help_entries(opts: list[Option]) -> list[str]:
    lines = []
    for o in opts:
        lines.append(f"  {o.key} = {lua(o.default)}")
        text = description(o) + (f" Values: {values_line(o)}." if o.enum else "")
        bounds = bounds_text(o)
        text += f" Range: {bounds}." if bounds else ""
        lines += textwrap.wrap(text, 78, initial_indent=" " * 8, subsequent_indent=" " * 8)
    return lines


def help_section() -> list[str]:
    lines = ["=" * 78, f"{HELP_HEADER}{'*inkling-options*':>{78 - len(HELP_HEADER)}}", "",
             "The server's options, generated from its options tree. Set them in",
             "`init_options` of |inkling-setup| (camelCase or snake_case keys), or while",
             "it runs with require(\"inkling\").configure(). Only what you set is sent.",
             "Advanced options are for measurement, research and troubleshooting.", ">",
             "    init_options = { completion = { drafts = 5 }, model = { device = \"cpu\" } }",
             "<"]
    opts = options()
    for (title, everyday), (_, advanced) in zip(grouped(opts, False), grouped(opts, True)):
        for heading, group in ((title, everyday), (f"{title}, advanced", advanced)):
            if group:
                lines += ["", f"{heading} ~", ""] + help_entries(group)
    return lines + [""]


def help_text(current: str) -> str:
    lines = current.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith(HELP_HEADER)]
    end = next(i for i, line in enumerate(lines) if line.startswith(HELP_END))
    start = starts[0] - 1 if starts else end        # the ==== rule above the header
    return "\n".join(lines[:start] + help_section() + lines[end:])


# ------------------------------------------------------------------ main
def outputs() -> dict[Path, str]:
    """What each generated file should hold."""
    manifest_now = MANIFEST.read_text(encoding="utf-8")
    return {DOC: doc_text(json.loads(manifest_now)), MANIFEST: manifest_text(manifest_now),
            NVIM_HELP: help_text(NVIM_HELP.read_text(encoding="utf-8"))}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming each file that is out of date")
    args = p.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
            if not args.check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print("out of date (run python scripts/configuration_doc.py): "
              + ", ".join(map(str, stale)), file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
