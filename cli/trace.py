"""`inkling trace retype` and `inkling trace git`: edit traces written for `inkling replay`."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from inkling.evaluation.git_repo import GitRepo
from inkling.evaluation.git_trace import GitTraceOptions, GitTracer
from inkling.evaluation.retype_trace import RetypeError, RetypeOptions, retype_trace


def add_command(sub) -> None:
    """Register `trace` on the `inkling` command's subparsers."""
    p = sub.add_parser("trace", help="make edit traces from files or a git history",
                       description="Write edit traces (JSON Lines) for `inkling replay`.")
    kinds = p.add_subparsers(dest="trace_kind", metavar="KIND", required=True)
    r = kinds.add_parser("retype", help="function bodies removed, then typed back line by line",
                         description="One trace per FILE: its function bodies are removed, then "
                         "typed back line by line with a completion before each line and edits "
                         "elsewhere in between. The other FILEs are the workspace.")
    r.add_argument("files", nargs="+", metavar="FILE", help="the files to retype")
    r.add_argument("--out", required=True, metavar="DIR",
                   help="folder the traces are written to (one .jsonl per FILE)")
    r.add_argument("--seed", type=int, default=0,
                   help="seed of the random choices: functions, edits, typing pauses "
                   "(default 0; the same seed gives the same traces)")
    r.add_argument("--max-functions", type=int, default=8, metavar="N",
                   help="functions retyped per file, picked at random (0: all; default 8)")
    r.add_argument("--no-mid-line", dest="mid_line", action="store_false",
                   help="ask for completions only at line starts, not also just after "
                   "triggers such as `obj.` and `import ` inside a line")
    r.add_argument("--no-accept", dest="accept", action="store_false",
                   help="write no `accept` event after each completion (by default the replay "
                   "takes the first draft when its first line is the one typed next)")
    r.add_argument("--workspace", action="extend", nargs="+", default=[], metavar="FILE",
                   help="more files of the workspace, not retyped (a `file` event in every "
                   "trace), e.g. the rest of a package")
    r.add_argument("--root", metavar="DIR", help="paths in the traces are relative to DIR "
                   "(default: the deepest folder holding every file), e.g. the folder above a "
                   "package, so that its absolute imports resolve")
    r.set_defaults(func=_cmd_trace_retype)
    g = kinds.add_parser("git", help="a git history, commit by commit, hunk by hunk",
                         description="One trace per commit after REV (first parents): each "
                         "changed file is opened as at the parent, the diff applied hunk by hunk "
                         "with a completion at the start of every added line, then checked.")
    g.add_argument("repo", metavar="REPO", help="a git repository's folder")
    g.add_argument("--since", required=True, metavar="REV",
                   help="the commit (or any revision git knows) after which to replay")
    g.add_argument("--out", required=True, metavar="DIR",
                   help="folder the traces are written to (one .jsonl per commit)")
    g.add_argument("--ext", action="append", metavar=".EXT",
                   help="file extensions to replay (repeatable; default .py)")
    g.add_argument("--max-commits", type=int, default=0, metavar="N", help="0: all")
    g.add_argument("--context-files", type=int, default=8, metavar="N",
                   help="unchanged files written into the workspace per trace (default 8)")
    g.add_argument("--seed", type=int, default=0,
                   help="seed of the random choices: context files, typing pauses (default 0)")
    g.add_argument("--no-accept", dest="accept", action="store_false",
                   help="write no `accept` event after each completion")
    g.set_defaults(func=_cmd_trace_git)


def _read_python(arg: str) -> str:
    try:
        return Path(arg).read_bytes().decode("utf-8")
    except OSError as exc:
        raise RetypeError(f"{arg}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise RetypeError(f"{arg}: not UTF-8 text (byte {exc.start})") from None


def _retype_inputs(files: list[str], root: str | None = None
                   ) -> tuple[dict[str, str], list[str]]:
    """(workspace-relative path -> text, each FILE's path); the root is ``root`` or the
    deepest folder holding every FILE."""
    resolved = [Path(f).resolve() for f in files]
    texts = [_read_python(f) for f in files]
    top = Path(root).resolve() if root else Path(os.path.commonpath([r.parent for r in resolved]))
    outside = [f for f, r in zip(files, resolved) if top not in r.parents]
    if outside:
        raise RetypeError(f"{outside[0]}: not inside --root {root}")
    rel = [r.relative_to(top).as_posix() for r in resolved]
    return dict(zip(rel, texts)), rel


def _cmd_trace_retype(args) -> int:
    workspace, paths = _retype_inputs(args.files + args.workspace, args.root)
    retyped = list(dict.fromkeys(paths[:len(args.files)]))
    out = Path(args.out)
    options = RetypeOptions(seed=args.seed, max_functions=max(0, args.max_functions),
                            mid_line=args.mid_line, accept=args.accept)
    written = 0
    for path in retyped:
        text = workspace[path]
        try:
            builder = retype_trace(path, text, workspace, options)
        except RetypeError as exc:
            print(f"inkling: skipped {exc}", file=sys.stderr)
            continue
        print(builder.write(out / f"{builder.header.name.removesuffix('.py')}.jsonl"))
        written += 1
    if not written:
        raise RetypeError("no trace was written (no FILE has a function body to retype)")
    return 0


def _cmd_trace_git(args) -> int:
    exts = tuple(e if e.startswith(".") else "." + e for e in (args.ext or [".py"]))
    options = GitTraceOptions(since=args.since, extensions=exts, seed=args.seed,
                              max_commits=max(0, args.max_commits),
                              context_files=max(0, args.context_files), accept=args.accept)
    traces = GitTracer(GitRepo(args.repo), options).traces()
    out = Path(args.out)
    for t in traces:
        print(t.builder.write(out / f"{t.builder.header.name}.jsonl"))
    if not traces:
        print(f"inkling: no commit after {args.since} changes a {'/'.join(exts)} file",
              file=sys.stderr)
    return 0
