"""The training corpus: package tests left out, the held-out package never trained on,
repository-level samples in the documented format."""
import random
import zipfile

import pytest
from tokenizers import Tokenizer

from inkling.models import BUNDLED_MODEL_DIR
from inkling.evaluation import packages
from inkling.models.corpus import CorpusFile
from inkling.evaluation.eval_sets import SETS
from inkling.training.samples import (REPO_CONTEXT_CHARS, RepoIndex, build_training_rows,
                                    make_pieces, make_repo_piece, outline)


def _wheel(path, files: dict[str, str]):
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def test_wheels_are_read_without_tests_metadata_or_data_tables(tmp_path):
    table = "DATA = (\n" + "".join(f"    {i},\n" for i in range(400)) + ")\n"
    w = _wheel(tmp_path / "demo-1.0-py3-none-any.whl", {
        "demo/__init__.py": "from .core import run\n",
        "demo/core.py": "def run():\n    return 1\n",
        "demo/tests/test_core.py": "def test_run(): pass\n",
        "demo/testing/helpers.py": "X = 1\n",
        "demo/test_util.py": "pass\n",
        "demo/util_test.py": "pass\n",
        "demo/conftest.py": "pass\n",
        "demo/_vendor/six.py": "X = 1\n",
        "demo/extern/vendor/other.py": "X = 1\n",
        "demo/_table.py": table,
        "demo/readme.txt": "not code\n",
        "demo-1.0.dist-info/METADATA": "Name: demo\n",
    })
    files = packages.read_wheel(w, "demo==1.0")
    assert [f.relpath for f in files] == ["demo/__init__.py", "demo/core.py"]
    assert {f.package for f in files} == {"demo==1.0"}
    for p in ("a/tests/x.py", "a/test/x.py", "a/testing/x.py", "a/test_x.py", "a/x_test.py",
              "conftest.py"):
        assert packages.is_test_path(p), p
    assert not packages.is_test_path("a/testcase.py")
    assert packages.is_vendored_path("a/_vendor/b.py") and not packages.is_vendored_path("vendor.py")


def test_package_files_that_copy_a_held_out_file_are_dropped():
    held = CorpusFile("sched.py", "".join(f"    result_{i} = compute_something({i}, value)\n"
                                          for i in range(40)))
    lines = held.text.splitlines(keepends=True)
    fork = CorpusFile("forked/sched.py", "import os\n" + "".join(lines[:20]), "forked==1")
    own = CorpusFile("own/core.py", "".join(lines[:5]) + "def f():\n    return 1\n", "own==1")
    kept, dropped = packages.drop_held_out_copies([fork, own], [held])
    assert kept == [own] and dropped == [
        "forked==1:forked/sched.py holds 20 of the 40 distinctive lines of held-out sched.py"]


def test_a_package_over_the_cap_keeps_files_by_path_hash(tmp_path):
    w = _wheel(tmp_path / "big-1.0-py3-none-any.whl",
               {f"big/m{i}.py": f"X{i} = {i}\n" + "y = 1\n" * 100 for i in range(20)})
    kept = packages.read_wheel(w, "big==1.0", max_chars=3000)
    assert 0 < sum(len(f.text) for f in kept) <= 3000
    assert kept == packages.read_wheel(w, "big==1.0", max_chars=3000)


def test_the_held_out_package_is_never_trained_on():
    assert all(packages._norm(n) != "toolz" for n, _ in packages.PACKAGES)
    with pytest.raises(ValueError, match="held-out"):
        packages.training_packages(packages.PACKAGES + (("toolz", "1.0.0"),))
    with pytest.raises(AssertionError):
        packages.assert_not_held_out([CorpusFile("tlz/__init__.py", "x = 1\n", "other==1")])
    with pytest.raises(AssertionError):
        packages.assert_not_held_out([CorpusFile("a.py", "x = 1\n", "toolz==1.0.0")])
    # every pinned package names an exact version
    assert all(v and v[0].isdigit() for _, v in packages.PACKAGES)


@pytest.mark.parametrize("held", [p for s in SETS.values() for p in s.packages],
                         ids=lambda p: p.pin)
def test_no_package_of_either_evaluation_set_is_trained_on(held):
    with pytest.raises(ValueError, match=f"held-out package \\({held.pin}, of an evaluation set"):
        packages.training_packages(packages.PACKAGES + ((held.name.upper(), "0.1"),))
    for top in held.top_level:
        with pytest.raises(AssertionError, match=f"other==1:{top}"):
            packages.assert_not_held_out([CorpusFile(f"{top}/core.py", "x = 1\n", "other==1")])
        with pytest.raises(AssertionError):
            packages.assert_not_held_out([CorpusFile(f"{top}.py", "x = 1\n", "other==1")])
    with pytest.raises(AssertionError, match=held.pin):
        packages.assert_not_held_out([CorpusFile("a.py", "x = 1\n", held.pin)])
    packages.assert_not_held_out([CorpusFile(f"lib/{held.top_level[0]}.py", "x = 1\n", "o==1"),
                                  CorpusFile("a.py", "x = 1\n", "")])


def test_the_cached_wheels_hold_no_held_out_code():
    """Over the real cache, where the wheels are there (no download in a test)."""
    have = [(n, v) for n, v in packages.PACKAGES if packages.find_wheel(n, v)]
    if not have:
        pytest.skip("no cached wheels (inkling train downloads them)")
    for name, version in have[:10]:
        files = packages.read_wheel(packages.find_wheel(name, version), f"{name}=={version}")
        packages.assert_not_held_out(files)
        assert not any(packages.is_test_path(f.relpath) for f in files)


def _pkg():
    return [
        CorpusFile("pkg/__init__.py", "from .core import Engine\n__all__ = ['Engine']\n", "pkg==1"),
        CorpusFile("pkg/core.py", "from .util import helper, LIMIT\n\n\nclass Engine:\n"
                   "    def run(self, x: int,\n            y: int = 2) -> int:\n"
                   "        return helper(x) + y\n" + "# filler\n" * 200, "pkg==1"),
        CorpusFile("pkg/util.py", "LIMIT = 10\n\n\ndef helper(x):\n    return x * 2\n\n\n"
                   "def other():\n    pass\n", "pkg==1"),
        CorpusFile("pkg/extra.py", "import os\n\n\ndef extra():\n    return os.sep\n", "pkg==1"),
        CorpusFile("lonely.py", "def alone():\n    pass\n", ""),
    ]


def test_outline_keeps_headers_and_constants():
    text = ("import os\nLIMIT = 10\n\n\nclass A(Base):\n    x = 1\n\n    def f(self, a,\n"
            "          b):\n        return a\n\nasync def g():\n    pass\n")
    assert outline(text) == ("LIMIT = 10\nclass A(Base):\n    def f(self, a,\n          b):\n"
                             "async def g():\n")


def test_repo_samples_put_package_files_with_paths_before_the_target():
    files = _pkg()
    index = RepoIndex.build(files)
    assert index.imported[1] == [2]                      # core imports util
    assert index.imported[0] == [1]                      # the package imports core
    assert not index.eligible(4)                         # a lone module has no neighbours
    rng = random.Random(3)
    seen_first = set()
    for _ in range(200):
        piece = make_repo_piece(files, index, 1, files[1].text[:300], rng, fim_rate=0.5)
        parts = piece.parts
        seps = [i for i, (t, sp) in enumerate(parts) if sp and t == "<|file_sep|>"]
        assert seps and seps[0] == 0 and 1 <= len(seps) - 1 <= 4
        blocks = [parts[i + 1][0] for i in seps]
        paths = [b.split("\n", 1)[0] for b in blocks]
        assert paths[-1] == "pkg/core.py"                # the target comes last, with its path
        assert "pkg/core.py" not in paths[:-1] and len(set(paths)) == len(paths)
        assert all(p in {"pkg/__init__.py", "pkg/util.py", "pkg/extra.py"} for p in paths[:-1])
        assert sum(len(b) for b in blocks[:-1]) <= REPO_CONTEXT_CHARS + 200
        assert all(b.endswith("\n") for b in blocks[:-1])
        assert parts[-1] == ("<|endoftext|>", True)
        tail = [t for t, sp in parts[seps[-1] + 1:] if sp]
        assert tail in (["<|endoftext|>"], ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
                                            "<|endoftext|>"])
        seen_first.add(paths[-2])
    assert "pkg/util.py" in seen_first                   # the imported file sits by the target


def test_epoch_rows_are_deterministic_and_mix_both_forms():
    tok = Tokenizer.from_file(str(BUNDLED_MODEL_DIR / "tokenizer.json"))
    files = _pkg() * 1
    a = build_training_rows(files, tok, 32, seed=5, repo_rate=0.5)
    b = build_training_rows(files, tok, 32, seed=5, repo_rate=0.5)
    assert a.shape[1] == 33 and (a == b).all()
    pieces = make_pieces(files, seed=5, fim_rate=0.0, repo_rate=1.0)
    text = "".join(t for p in pieces for t, _ in p.parts)
    for f in files:                                      # no code is lost to the cut
        assert f.text.replace("# filler\n", "")[:20] in text
    assert any(p.parts[0][0] == "<|file_sep|>" for p in pieces)
    assert any(p.parts[0][0] != "<|file_sep|>" for p in pieces)


def test_stdlib_chunks_come_as_often_as_asked():
    stdlib = CorpusFile("sched.py", "import heapq\n\n\nclass scheduler:\n    pass\n")
    files = _pkg() + [stdlib]

    def count(pieces, needle):
        return sum(needle in "".join(t for t, _ in p.parts) for p in pieces)

    once = make_pieces(files, seed=3, fim_rate=0.0, repo_rate=0.0)
    twice = make_pieces(files, seed=3, fim_rate=0.0, repo_rate=0.0, stdlib_repeat=2)
    assert count(once, "class scheduler") == 1 and count(twice, "class scheduler") == 2
    assert count(twice, "def alone") == 2       # another standard-library file
    assert len(twice) == len(once) + 2          # the package files' chunks come once


def test_the_training_data_leaves_out_a_package_file_that_copies_a_held_out_one(monkeypatch):
    """``Data`` over the real standard library with stand-in packages: a fork of a held-out
    standard-library module, and a copy of a reporting-set module, are not trained on, and
    the run says so."""
    from inkling.models.corpus import load_corpus
    from inkling.training.data import Data
    from inkling.training.train_options import TrainOptions

    held = next(f for f in load_corpus().held_out if f.relpath == "sched.py")
    fork = CorpusFile("forked/sched.py", held.text, "forked==1.0")
    own = CorpusFile("own/core.py", "def f():\n    return 1\n", "own==1.0")
    toolz = CorpusFile("toolz/utils.py", "def no_default():\n    pass\n", "toolz==1.0.0")
    reported = CorpusFile("semver/version.py", "".join(
        f"        self._part_{i} = parse_the_version_part({i}, version)\n" for i in range(12)),
        "semver==3.0.2")
    vendored = CorpusFile("vendoring/_semver.py", reported.text, "vendoring==1.0")
    monkeypatch.setattr(packages, "load_package_files", lambda: [fork, own, vendored])
    monkeypatch.setattr(packages, "load_held_out_package", lambda: [toolz])
    monkeypatch.setattr(packages, "load_held_out_files", lambda: [toolz, reported])
    tok = Tokenizer.from_file(str(BUNDLED_MODEL_DIR / "tokenizer.json"))
    data = Data(TrainOptions(max_files=5, seq_len=64, eval_rows=2), tok)
    assert own in data.files and fork not in data.files and vendored not in data.files
    assert data.copies_dropped == [
        f"forked==1.0:forked/sched.py holds {len(packages._distinctive_lines(held.text))} of "
        f"the {len(packages._distinctive_lines(held.text))} distinctive lines of held-out "
        "sched.py",
        "vendoring==1.0:vendoring/_semver.py holds 12 of the 12 distinctive lines of "
        "held-out semver/version.py"]
